// Package declared keeps what an app's own program declared in-process and
// the registry in Redis does not record: a typed task queue's payload
// check, which tools reading the registry (the CLI and the HTTP API
// embedded in that program) then apply too; and the registrars that write
// the program's declarations other than streams (task queues) to the
// registry when the app registers (app.Register, a worker's start).
//
// Values live in the app (package app sets Of), so they go with it.
package declared

import (
	"context"
	"sort"
	"strings"
	"sync"
)

// Of returns the declarations of an *app.App; set by package app.
var Of func(app any) *sync.Map

// PayloadCheck is what a typed task queue records (SetTaskPayload): it
// refuses a JSON payload the queue's handlers would not decode exactly.
type PayloadCheck func(payload []byte) error

// QueueCheck returns the payload check of a task queue value (a
// *task.Queue, looked up from the registry or declared): what its enqueues
// refuse beyond invalid JSON, or nil; set by package task.
var QueueCheck func(queue any) PayloadCheck

// taskPayload is the key of task queue name's payload check.
func taskPayload(name string) string { return "task-payload/" + name }

// SetTaskPayload records the payload check of task queue name in app.
func SetTaskPayload(app any, name string, check PayloadCheck) {
	Of(app).Store(taskPayload(name), check)
}

// TaskPayload returns the payload check app's program declared for task
// queue name, or nil.
func TaskPayload(app any, name string) PayloadCheck {
	if check, ok := Of(app).Load(taskPayload(name)); ok {
		return check.(PayloadCheck)
	}
	return nil
}

// A Registrar writes one declaration of an app's program to the registry
// in Redis (a task queue's definition, say).
type Registrar func(ctx context.Context) error

// registrar is the key of a registrar.
func registrar(name string) string { return "register/" + name }

// SetRegistrar records r as what writes declaration name of app to the
// registry; a later one of the same name replaces it.
func SetRegistrar(app any, name string, r Registrar) {
	Of(app).Store(registrar(name), r)
}

// Registrars returns the registrars of app, by name.
func Registrars(app any) []Registrar {
	var names []string
	m := map[string]Registrar{}
	Of(app).Range(func(k, v any) bool {
		if s, ok := k.(string); ok && strings.HasPrefix(s, "register/") {
			names = append(names, s)
			m[s] = v.(Registrar)
		}
		return true
	})
	sort.Strings(names)
	out := make([]Registrar, len(names))
	for i, n := range names {
		out[i] = m[n]
	}
	return out
}
