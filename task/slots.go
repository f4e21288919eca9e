// Slots: a worker runs at most its concurrency's worth of tasks at once.
// A fetch reserves the slots free when it begins, split over the priority
// levels (quotas), and gives back those it did not fill; a slot that frees
// signals the fetchers.

package task

func (w *worker) currentLimit() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}

// reserve holds every free slot for one fetch and returns how many, with
// the fetch's quotas per priority level (see quotas). A patient fetch takes
// nothing (short) while fewer than half the slots are free and tasks run:
// slots that free close together are filled by one fetch, not one each.
func (w *worker) reserve(patient bool) (n int, quota []int, short bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n = w.limit - len(w.active) - w.reserved
	if n <= 0 {
		return 0, nil, false
	}
	if patient && 2*n < w.limit && len(w.active) > 0 {
		return 0, nil, true
	}
	w.reserved += n
	return n, w.quotas(n), false
}

// room returns how many tasks a fetch that reserved n slots may start now:
// fewer when the concurrency was lowered since.
func (w *worker) room(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(0, min(n, w.limit-len(w.active)-(w.reserved-n)))
}

// unreserve gives back the n slots a fetch held, once the tasks it took
// were started (or handed back); a slot left over goes to the next fetch.
func (w *worker) unreserve(n int) {
	w.mu.Lock()
	w.reserved -= n
	left := w.limit - len(w.active) - w.reserved
	w.mu.Unlock()
	if left > 0 {
		w.signal()
	}
}

func (w *worker) signal() {
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// quotas splits n fetches over the priority levels: all to the first
// level for strict priorities (the script fills from the next levels when
// a level runs short), else in proportion to the weights, slot by slot with
// a smooth weighted round robin, so the shares hold exactly over any run of
// fetches, however small each is. w.mu is held.
func (w *worker) quotas(n int) []int {
	levels := w.q.set.levels
	out := make([]int, len(levels))
	if w.q.set.strict || len(out) == 1 {
		out[0] = n
		return out
	}
	if w.rr == nil {
		w.rr = make([]int, len(levels))
	}
	total := 0
	for _, l := range levels {
		total += l.Weight
	}
	for range n {
		best := 0
		for i, l := range levels {
			w.rr[i] += l.Weight
			if w.rr[i] > w.rr[best] {
				best = i
			}
		}
		w.rr[best] -= total
		out[best]++
	}
	return out
}
