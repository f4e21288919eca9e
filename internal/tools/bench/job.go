package bench

// A job is a goroutine whose end and error its owner waits for.
type job struct {
	done chan struct{}
	err  error
}

// spawn runs fn in a new goroutine.
func spawn(fn func() error) *job {
	j := &job{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		j.err = fn()
	}()
	return j
}

// wait waits for the job to end and returns its error.
func (j *job) wait() error {
	<-j.done
	return j.err
}
