package inspect

import "time"

// SetTaskWorkerAlive sets how recently i must see a task worker read or
// claim to count it alive (TaskWorkerAlive).
func SetTaskWorkerAlive(i *Inspector, d time.Duration) { i.alive = d }
