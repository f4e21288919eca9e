package rebalance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Assignment maps a member (executor ID) to the sorted list of partitions it
// owns.
//
// Assignments returned by [Assign] list every member, in ascending partition
// order, with each partition under exactly one member. Assignments built by
// hand or read from storage need not be so tidy; the methods below accept any
// value, including nil.
type Assignment map[string][]int

// Assign computes the assignment of partitions 0..partitions-1 to the given
// live members, starting from prev (which may be nil, may name members that
// are gone, may have partitions out of range, duplicated across members, or
// missing).
//
// The result is balanced, gives every partition exactly one owner, and moves
// as few partitions away from their previous owner as balance allows; see the
// package documentation for the precise guarantees and tie-breaking rules.
//
// members may be in any order and may contain duplicates, which are ignored.
// A negative partition count is treated as zero. If members is empty, Assign
// returns an empty, non-nil Assignment. Otherwise every member is a key of
// the result, with a non-nil (possibly empty) partition list. Neither members
// nor prev is modified, and the result shares no memory with them.
func Assign(partitions int, members []string, prev Assignment) Assignment {
	partitions = max(partitions, 0)

	// Work on a sorted, duplicate-free copy so that the result cannot depend
	// on the caller's ordering.
	ids := slices.Clone(members)
	slices.Sort(ids)
	ids = slices.Compact(ids)

	next := make(Assignment, len(ids))
	if len(ids) == 0 {
		return next
	}

	// previous[p] is the live member that owned partition p before, or ""
	// with hasPrev[p] false if nobody (alive) did.
	previous, hasPrev := previousOwners(partitions, ids, prev)

	// held[i] lists, ascending, the partitions ids[i] owned before and could
	// keep.
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	held := make([][]int, len(ids))
	for p := range partitions {
		if hasPrev[p] {
			i := index[previous[p]]
			held[i] = append(held[i], p)
		}
	}

	quota := quotas(partitions, held)

	// Each member keeps up to its quota of the partitions it held, preferring
	// the lowest-numbered ones. Everything else is free.
	owned := make([]bool, partitions)
	for i, id := range ids {
		keep := held[i][:min(len(held[i]), quota[i])]
		list := make([]int, 0, quota[i])
		list = append(list, keep...)
		for _, p := range keep {
			owned[p] = true
		}
		next[id] = list
	}

	// Hand the free partitions, ascending, to the members below quota, in
	// ascending ID order. The quotas sum to partitions, so the free
	// partitions exactly fill the gaps.
	i := 0
	for p := range partitions {
		if owned[p] {
			continue
		}
		for len(next[ids[i]]) >= quota[i] {
			i++
		}
		next[ids[i]] = append(next[ids[i]], p)
	}

	// Kept partitions come first in each list, so restore ascending order.
	for _, list := range next {
		slices.Sort(list)
	}
	return next
}

// previousOwners resolves prev into at most one live previous owner per
// partition in [0, partitions). ids must be sorted and duplicate-free.
// Claims by departed members and out-of-range partitions are ignored; when
// several live members claim a partition, the smallest ID wins.
func previousOwners(partitions int, ids []string, prev Assignment) (owner []string, has []bool) {
	owner = make([]string, partitions)
	has = make([]bool, partitions)
	// Visiting members in ascending ID order and keeping the first claim
	// makes the smallest ID win, independent of map iteration order.
	for _, id := range ids {
		for _, p := range prev[id] {
			if p < 0 || p >= partitions || has[p] {
				continue
			}
			owner[p] = id
			has[p] = true
		}
	}
	return owner, has
}

// quotas returns how many partitions each member must own: with P partitions
// and M members, every member gets floor(P/M) and P mod M of them get one
// more. held[i] is what member i may keep, and ids are in ascending order.
//
// A member benefits from the larger quota only if it holds more than
// floor(P/M) partitions: it then keeps one more partition. The extra slots
// therefore go to the members holding the most partitions, ties broken by
// ascending ID, which maximises the number of partitions kept.
func quotas(partitions int, held [][]int) []int {
	m := len(held)
	base, extra := partitions/m, partitions%m

	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	// The sort is stable and order starts in ascending ID order, so equal
	// holdings keep ascending ID order.
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(len(held[b]), len(held[a]))
	})

	quota := make([]int, m)
	for rank, i := range order {
		quota[i] = base
		if rank < extra {
			quota[i]++
		}
	}
	return quota
}

// Owner returns the member that owns partition p. If several members list p,
// the one with the smallest ID is reported, so the answer does not depend on
// map iteration order. ok is false if no member lists p.
func (a Assignment) Owner(p int) (member string, ok bool) {
	for id, list := range a {
		if ok && id >= member {
			continue
		}
		if slices.Contains(list, p) {
			member, ok = id, true
		}
	}
	return member, ok
}

// Moves returns the number of partitions whose owner differs between a and
// next: partitions listed in both under different members, plus partitions
// listed in only one of the two. Owners are resolved as by [Assignment.Owner].
func (a Assignment) Moves(next Assignment) int {
	before, after := a.owners(), next.owners()
	moves := 0
	for p, owner := range before {
		if o, ok := after[p]; !ok || o != owner {
			moves++
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			moves++
		}
	}
	return moves
}

// owners maps each listed partition to its owner, resolving duplicates to the
// smallest member ID like [Assignment.Owner].
func (a Assignment) owners() map[int]string {
	owners := make(map[int]string)
	for id, list := range a {
		for _, p := range list {
			if o, ok := owners[p]; !ok || id < o {
				owners[p] = id
			}
		}
	}
	return owners
}

// maxReported bounds the number of problems [Assignment.Validate] describes
// individually, so that a badly broken assignment yields a readable error.
const maxReported = 10

// Validate reports whether a is a proper assignment of partitions
// 0..partitions-1: every partition in range has exactly one owner and no
// member lists a partition outside the range. A negative partition count is
// treated as zero. Validate returns nil if a is proper, and otherwise an error
// describing the problems, in ascending order of partition.
//
// Validate does not check balance, and does not require partition lists to
// be sorted.
func (a Assignment) Validate(partitions int) error {
	partitions = max(partitions, 0)

	ids := make([]string, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	slices.Sort(ids)

	// claims[p] lists, in ascending ID order, each member listing p in range,
	// once per mention. Out-of-range mentions are collected separately.
	claims := make([][]string, partitions)
	type mention struct {
		member string
		p      int
	}
	var outside []mention
	for _, id := range ids {
		for _, p := range a[id] {
			if p < 0 || p >= partitions {
				outside = append(outside, mention{id, p})
				continue
			}
			claims[p] = append(claims[p], id)
		}
	}
	slices.SortStableFunc(outside, func(x, y mention) int { return cmp.Compare(x.p, y.p) })

	var problems []string
	for _, m := range outside {
		problems = append(problems, fmt.Sprintf("member %q lists partition %d, outside [0,%d)", m.member, m.p, partitions))
	}
	for p, owners := range claims {
		switch {
		case len(owners) == 0:
			problems = append(problems, fmt.Sprintf("partition %d has no owner", p))
		case len(owners) > 1:
			problems = append(problems, fmt.Sprintf("partition %d is listed %d times, by %q", p, len(owners), owners))
		}
	}
	if len(problems) == 0 {
		return nil
	}

	errs := make([]error, 0, maxReported+1)
	for _, s := range problems[:min(len(problems), maxReported)] {
		errs = append(errs, errors.New(s))
	}
	if n := len(problems) - maxReported; n > 0 {
		errs = append(errs, fmt.Errorf("and %d more problems", n))
	}
	return fmt.Errorf("rebalance: invalid assignment of %d partitions: %w", partitions, errors.Join(errs...))
}

// Diff returns what member must do to go from prev to next: the partitions it
// owns in prev but not in next (release) and those it owns in next but not in
// prev (acquire). Both are ascending and free of duplicates, and nil when
// empty. A member absent from prev starts with nothing; a member absent from
// next ends with nothing.
//
// Diff looks only at member's own lists. During a handover a member should
// release before the new owner acquires; that ordering is the caller's job.
func Diff(prev, next Assignment, member string) (release, acquire []int) {
	before := sortedSet(prev[member])
	after := sortedSet(next[member])

	// Merge the two ascending lists.
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || (i < len(before) && before[i] < after[j]):
			release = append(release, before[i])
			i++
		case i == len(before) || after[j] < before[i]:
			acquire = append(acquire, after[j])
			j++
		default: // Owned in both.
			i++
			j++
		}
	}
	return release, acquire
}

// sortedSet returns a sorted, duplicate-free copy of list.
func sortedSet(list []int) []int {
	s := slices.Clone(list)
	slices.Sort(s)
	return slices.Compact(s)
}
