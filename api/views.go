package api

import "github.com/leatdev/leat/task"

// The API answers durations as Go duration strings ("30s"), as it reads
// them, where the task package's types hold a time.Duration (encoded as
// nanoseconds). Each view wraps a task type and shadows its durations: a
// field of the outer struct wins over the embedded one of the same JSON name.

// infoView is a task.Info as the API answers it.
type infoView struct {
	*task.Info
	Timeout   duration `json:"timeout"`
	Retention duration `json:"retention"`
}

// viewInfo returns the view of in; nil for nil.
func viewInfo(in *task.Info) *infoView {
	if in == nil {
		return nil
	}
	return &infoView{Info: in, Timeout: duration(in.Timeout), Retention: duration(in.Retention)}
}

// definitionView is a task.Definition as the API answers it.
type definitionView struct {
	task.Definition
	Timeout    duration `json:"timeout"`
	BackoffMin duration `json:"backoff_min"`
	BackoffMax duration `json:"backoff_max"`
	Retention  duration `json:"retention"`
	Visibility duration `json:"visibility"`
	DeadAge    duration `json:"dead_age"`
	KeyWindow  duration `json:"key_window,omitempty"`
	RateWindow duration `json:"rate_window,omitempty"`
	UniqueTTL  duration `json:"unique_ttl,omitempty"`
}

func viewDefinition(d task.Definition) definitionView {
	return definitionView{Definition: d, Timeout: duration(d.Timeout), BackoffMin: duration(d.BackoffMin),
		BackoffMax: duration(d.BackoffMax), Retention: duration(d.Retention), Visibility: duration(d.Visibility),
		DeadAge: duration(d.DeadAge), KeyWindow: duration(d.KeyWindow), RateWindow: duration(d.RateWindow),
		UniqueTTL: duration(d.UniqueTTL)}
}

// updateView is a task.Update as the API answers it.
type updateView struct {
	task.Update
	Info *infoView `json:"info,omitempty"`
}
