package rdb

// Schemas is the hash of the schemas of the app's typed streams and task
// queues: field = SchemaField(kind, name), value = JSON (package
// internal/schema), written by the program that declares the stream or
// queue with a Go type when it registers (replaced by each registration,
// removed by one whose type takes any JSON); read by the CLI and the HTTP
// API to check records and payloads; no TTL.
func (s KeySpace) Schemas() string { return s.key("schemas", s.appTag()) }

// The kinds of SchemaField.
const (
	SchemaStream = "stream"
	SchemaQueue  = "queue"
)

// SchemaField is the field of Schemas holding the schema of stream or task
// queue (kind SchemaStream, SchemaQueue) name.
func SchemaField(kind, name string) string { return kind + "/" + name }
