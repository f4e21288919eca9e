// Package declared keeps what an app's own program declared in-process and
// the registry in Redis does not record: a typed task queue's payload
// check, which tools reading the registry (the CLI and the HTTP API
// embedded in that program) then apply too.
//
// Values live in the app (package app sets Of), so they go with it.
package declared

import "sync"

// Of returns the declarations of an *app.App; set by package app.
var Of func(app any) *sync.Map

// PayloadCheck is what a typed task queue records (SetTaskPayload): it
// refuses a JSON payload the queue's handlers would not decode exactly.
type PayloadCheck func(payload []byte) error

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
