package rebalance_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/leatdev/leat/rebalance"
)

// The helpers below re-derive, independently of the package, what a correct
// result must look like. They favour obviousness over speed.

// liveSet returns the set of distinct member IDs.
func liveSet(members []string) map[string]bool {
	live := make(map[string]bool, len(members))
	for _, m := range members {
		live[m] = true
	}
	return live
}

// resolvePrev returns the previous owner of each partition in [0,partitions)
// as documented: claims by members that are not live, and out-of-range
// partitions, are ignored; among several live claimants the smallest ID wins.
func resolvePrev(partitions int, live map[string]bool, prev rebalance.Assignment) map[int]string {
	owner := make(map[int]string)
	for id, list := range prev {
		if !live[id] {
			continue
		}
		for _, p := range list {
			if p < 0 || p >= partitions {
				continue
			}
			if cur, ok := owner[p]; !ok || id < cur {
				owner[p] = id
			}
		}
	}
	return owner
}

// lowerBound is the fewest partitions that must change owner for any balanced
// assignment: every partition without a live previous owner must move, and
// every member holding more than its quota must give up the surplus. Quotas
// are floor(P/M), plus one for P mod M members; an extra slot saves a move
// only for a member holding more than floor(P/M), and there are at most
// P mod M such slots.
func lowerBound(partitions int, live map[string]bool, prevOwner map[int]string) int {
	m := len(live)
	if m == 0 || partitions <= 0 {
		return 0
	}
	held := make(map[string]int)
	orphaned := 0
	for p := 0; p < partitions; p++ {
		if o, ok := prevOwner[p]; ok {
			held[o]++
		} else {
			orphaned++
		}
	}
	q, r := partitions/m, partitions%m
	surplus, over := 0, 0
	for _, c := range held {
		if c > q {
			surplus += c - q
			over++
		}
	}
	return orphaned + surplus - min(r, over)
}

// ownersOf inverts an assignment, failing the test on a partition listed
// twice.
func ownersOf(t testing.TB, a rebalance.Assignment) map[int]string {
	t.Helper()
	owner := make(map[int]string)
	for id, list := range a {
		for _, p := range list {
			if o, ok := owner[p]; ok {
				t.Fatalf("partition %d owned by both %q and %q", p, o, id)
			}
			owner[p] = id
		}
	}
	return owner
}

// checkAssign asserts every documented property of next = Assign(partitions,
// members, prev) and returns the owner of each partition in next.
func checkAssign(t testing.TB, partitions int, members []string, prev, next rebalance.Assignment) map[int]string {
	t.Helper()
	p := max(partitions, 0)
	live := liveSet(members)

	if next == nil {
		t.Fatal("Assign returned nil")
	}
	if len(live) == 0 {
		if len(next) != 0 {
			t.Fatalf("no members, got %v", next)
		}
		return nil
	}

	// Keys are exactly the live members; lists are non-nil and ascending.
	if len(next) != len(live) {
		t.Fatalf("got %d members %v, want %d", len(next), keys(next), len(live))
	}
	lo, hi := p, 0
	for id, list := range next {
		if !live[id] {
			t.Fatalf("unknown member %q in result", id)
		}
		if list == nil {
			t.Fatalf("member %q has a nil list", id)
		}
		for i := 1; i < len(list); i++ {
			if list[i-1] >= list[i] {
				t.Fatalf("member %q: list %v not strictly ascending", id, list)
			}
		}
		lo, hi = min(lo, len(list)), max(hi, len(list))
	}

	// Single owner for every partition, and nothing else.
	owner := ownersOf(t, next)
	if len(owner) != p {
		t.Fatalf("%d partitions owned, want %d", len(owner), p)
	}
	for q := range p {
		if _, ok := owner[q]; !ok {
			t.Fatalf("partition %d has no owner", q)
		}
	}
	if err := next.Validate(partitions); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// Balanced.
	if hi-lo > 1 {
		t.Fatalf("unbalanced: counts range over [%d,%d]: %v", lo, hi, next)
	}

	// Minimal moves.
	prevOwner := resolvePrev(p, live, prev)
	moved := 0
	for q := range p {
		if o, ok := prevOwner[q]; !ok || o != owner[q] {
			moved++
		}
	}
	if want := lowerBound(p, live, prevOwner); moved != want {
		t.Fatalf("%d partitions moved, lower bound is %d\nprev: %v\nnext: %v", moved, want, prev, next)
	}

	checkDiff(t, prev, next)
	return owner
}

// checkDiff asserts that applying Diff to each member's previous list yields
// its next list.
func checkDiff(t testing.TB, prev, next rebalance.Assignment) {
	t.Helper()
	ids := make(map[string]bool)
	for id := range prev {
		ids[id] = true
	}
	for id := range next {
		ids[id] = true
	}
	for id := range ids {
		release, acquire := rebalance.Diff(prev, next, id)
		set := make(map[int]bool)
		for _, p := range prev[id] {
			set[p] = true
		}
		for _, p := range release {
			if !set[p] {
				t.Fatalf("%q releases %d it did not own", id, p)
			}
			delete(set, p)
		}
		for _, p := range acquire {
			if set[p] {
				t.Fatalf("%q acquires %d it already owns", id, p)
			}
			set[p] = true
		}
		want := make(map[int]bool)
		for _, p := range next[id] {
			want[p] = true
		}
		if !reflect.DeepEqual(set, want) {
			t.Fatalf("%q: prev %v - %v + %v != next %v", id, prev[id], release, acquire, next[id])
		}
	}
}

func keys(a rebalance.Assignment) []string {
	ks := make([]string, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func clone(a rebalance.Assignment) rebalance.Assignment {
	if a == nil {
		return nil
	}
	c := make(rebalance.Assignment, len(a))
	for k, v := range a {
		c[k] = slices.Clone(v)
	}
	return c
}

func TestAssign(t *testing.T) {
	type A = rebalance.Assignment
	tests := []struct {
		name       string
		partitions int
		members    []string
		prev       A
		want       A
	}{
		{
			name:       "first join",
			partitions: 6,
			members:    []string{"a"},
			want:       A{"a": {0, 1, 2, 3, 4, 5}},
		},
		{
			name:       "second join takes half",
			partitions: 6,
			members:    []string{"b", "a"},
			prev:       A{"a": {0, 1, 2, 3, 4, 5}},
			want:       A{"a": {0, 1, 2}, "b": {3, 4, 5}},
		},
		{
			name:       "third join takes one from each",
			partitions: 6,
			members:    []string{"a", "b", "c"},
			prev:       A{"a": {0, 1, 2}, "b": {3, 4, 5}},
			want:       A{"a": {0, 1}, "b": {3, 4}, "c": {2, 5}},
		},
		{
			name:       "leave redistributes only the leaver's partitions",
			partitions: 6,
			members:    []string{"a", "c"},
			prev:       A{"a": {0, 1}, "b": {3, 4}, "c": {2, 5}},
			want:       A{"a": {0, 1, 3}, "c": {2, 4, 5}},
		},
		{
			name:       "uneven leave",
			partitions: 7,
			members:    []string{"a", "b"},
			prev:       A{"a": {0, 1, 2}, "b": {3, 4}, "c": {5, 6}},
			want:       A{"a": {0, 1, 2, 5}, "b": {3, 4, 6}},
		},
		{
			name:       "more members than partitions",
			partitions: 2,
			members:    []string{"d", "c", "b", "a"},
			want:       A{"a": {0}, "b": {1}, "c": {}, "d": {}},
		},
		{
			name:       "more members than partitions keeps the single previous owner",
			partitions: 2,
			members:    []string{"a", "b", "c"},
			prev:       A{"c": {0, 1}},
			want:       A{"a": {1}, "b": {}, "c": {0}},
		},
		{
			name:       "duplicate owners in prev",
			partitions: 4,
			members:    []string{"a", "b"},
			prev:       A{"a": {0, 1, 2}, "b": {1, 2, 3}},
			want:       A{"a": {0, 1}, "b": {2, 3}},
		},
		{
			name:       "duplicate owner that left does not count",
			partitions: 4,
			members:    []string{"b", "c"},
			prev:       A{"a": {0, 1, 2, 3}, "b": {0, 1}, "c": {2, 3}},
			want:       A{"b": {0, 1}, "c": {2, 3}},
		},
		{
			name:       "duplicates within one member",
			partitions: 4,
			members:    []string{"a", "b"},
			prev:       A{"a": {3, 3, 1, 1}, "b": {0}},
			want:       A{"a": {1, 3}, "b": {0, 2}},
		},
		{
			name:       "out-of-range partitions in prev",
			partitions: 3,
			members:    []string{"a", "b"},
			prev:       A{"a": {0, 5, -1}, "b": {1, 2, 3}},
			want:       A{"a": {0}, "b": {1, 2}},
		},
		{
			name:       "larger quota goes to the member that can use it",
			partitions: 4,
			members:    []string{"a", "b", "c"},
			prev:       A{"a": {0}, "b": {1, 2}, "c": {3, 4}},
			want:       A{"a": {0}, "b": {1, 2}, "c": {3}},
		},
		{
			name:       "missing partitions in prev",
			partitions: 5,
			members:    []string{"a", "b"},
			prev:       A{"a": {0}, "b": {1}},
			want:       A{"a": {0, 2, 3}, "b": {1, 4}},
		},
		{
			name:       "only departed members in prev",
			partitions: 4,
			members:    []string{"y", "x"},
			prev:       A{"a": {0, 1, 2, 3}},
			want:       A{"x": {0, 1}, "y": {2, 3}},
		},
		{
			name:       "duplicate members",
			partitions: 4,
			members:    []string{"b", "a", "b", "a"},
			want:       A{"a": {0, 1}, "b": {2, 3}},
		},
		{
			name:       "no members",
			partitions: 4,
			prev:       A{"a": {0, 1, 2, 3}},
			want:       A{},
		},
		{
			name:       "no partitions",
			partitions: 0,
			members:    []string{"a", "b"},
			prev:       A{"a": {0}},
			want:       A{"a": {}, "b": {}},
		},
		{
			name:       "negative partitions",
			partitions: -3,
			members:    []string{"a"},
			want:       A{"a": {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members, prev := slices.Clone(tt.members), clone(tt.prev)
			got := rebalance.Assign(tt.partitions, tt.members, tt.prev)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Assign(%d, %q, %v)\n got %v\nwant %v", tt.partitions, tt.members, tt.prev, got, tt.want)
			}
			if !slices.Equal(members, tt.members) || !reflect.DeepEqual(prev, tt.prev) {
				t.Fatal("Assign modified its inputs")
			}
			checkAssign(t, tt.partitions, tt.members, tt.prev, got)
		})
	}
}

func TestAssignResultIsIndependentOfInputs(t *testing.T) {
	prev := rebalance.Assignment{"a": {0, 1}, "b": {2, 3}}
	got := rebalance.Assign(4, []string{"a", "b"}, prev)
	got["a"][0] = 99
	if prev["a"][0] != 0 {
		t.Fatal("result shares memory with prev")
	}
}

func TestOwner(t *testing.T) {
	a := rebalance.Assignment{"b": {0, 2}, "a": {2, 5}, "c": {}}
	tests := []struct {
		p    int
		want string
		ok   bool
	}{
		{0, "b", true},
		{2, "a", true}, // Listed twice: smallest ID.
		{5, "a", true},
		{1, "", false},
		{-1, "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.p), func(t *testing.T) {
			got, ok := a.Owner(tt.p)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("Owner(%d) = %q, %v; want %q, %v", tt.p, got, ok, tt.want, tt.ok)
			}
		})
	}
	if _, ok := rebalance.Assignment(nil).Owner(0); ok {
		t.Fatal("nil assignment owns partition 0")
	}
}

func TestMoves(t *testing.T) {
	type A = rebalance.Assignment
	tests := []struct {
		name       string
		prev, next A
		want       int
	}{
		{"both nil", nil, nil, 0},
		{"from nil", nil, A{"a": {0, 1}}, 2},
		{"to nil", A{"a": {0, 1}}, nil, 2},
		{"same", A{"a": {0, 1}, "b": {2}}, A{"b": {2}, "a": {1, 0}}, 0},
		{"one moves", A{"a": {0, 1}, "b": {2}}, A{"a": {0}, "b": {1, 2}}, 1},
		{"renamed owner", A{"a": {0, 1}}, A{"b": {0, 1}}, 2},
		{"dropped and added", A{"a": {0, 1}}, A{"a": {1, 2}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.prev.Moves(tt.next); got != tt.want {
				t.Fatalf("Moves = %d, want %d", got, tt.want)
			}
			if got := tt.next.Moves(tt.prev); got != tt.want {
				t.Fatalf("reverse Moves = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	type A = rebalance.Assignment
	tests := []struct {
		name       string
		a          A
		partitions int
		wantErr    []string // Substrings of the error; nil means valid.
	}{
		{"valid", A{"a": {0, 1}, "b": {2}, "c": {}}, 3, nil},
		{"valid unsorted", A{"a": {1, 0}}, 2, nil},
		{"empty", A{}, 0, nil},
		{"nil", nil, 0, nil},
		{"negative count", A{"a": {}}, -1, nil},
		{"missing", A{"a": {0}}, 2, []string{"partition 1 has no owner"}},
		{"nil but partitions", nil, 1, []string{"partition 0 has no owner"}},
		{"two owners", A{"a": {0, 1}, "b": {1}}, 2, []string{`partition 1 is listed 2 times, by ["a" "b"]`}},
		{"listed twice by one member", A{"a": {0, 0}}, 1, []string{`partition 0 is listed 2 times, by ["a" "a"]`}},
		{"out of range", A{"a": {0, 2, -1}}, 2, []string{
			`member "a" lists partition -1, outside [0,2)`,
			`member "a" lists partition 2, outside [0,2)`,
			"partition 1 has no owner",
		}},
		{"many problems", A{}, 25, []string{"partition 0 has no owner", "partition 9 has no owner", "and 15 more problems"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate(tt.partitions)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestDiff(t *testing.T) {
	type A = rebalance.Assignment
	tests := []struct {
		name             string
		prev, next       A
		member           string
		wantRel, wantAcq []int
	}{
		{"join", nil, A{"a": {0, 1}}, "a", nil, []int{0, 1}},
		{"leave", A{"a": {0, 1}}, A{"b": {0, 1}}, "a", []int{0, 1}, nil},
		{"unchanged", A{"a": {0, 1}}, A{"a": {1, 0}}, "a", nil, nil},
		{"both", A{"a": {0, 1, 3}}, A{"a": {1, 2, 4}}, "a", []int{0, 3}, []int{2, 4}},
		{"unsorted with duplicates", A{"a": {3, 0, 3}}, A{"a": {4, 4, 0}}, "a", []int{3}, []int{4}},
		{"unknown member", A{"a": {0}}, A{"a": {0}}, "z", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel, acq := rebalance.Diff(tt.prev, tt.next, tt.member)
			if !slices.Equal(rel, tt.wantRel) || !slices.Equal(acq, tt.wantAcq) {
				t.Fatalf("Diff = %v, %v; want %v, %v", rel, acq, tt.wantRel, tt.wantAcq)
			}
		})
	}
}

// step is one change to a consumer group in a random history.
type step struct {
	partitions int
	members    []string
	joined     map[string]bool // Members not in the previous step.
	left       bool            // Whether any member left.
	resized    bool            // Whether the partition count changed.
}

// history generates a random sequence of joins, leaves and occasional resizes
// for a group of 1 to 40 members over 1 to 300 partitions.
func history(rng *rand.Rand, steps int) []step {
	partitions := 1 + rng.IntN(300)
	var members []string
	next := 0
	newID := func() string {
		next++
		// Random prefixes make the ID order unrelated to join order.
		return fmt.Sprintf("%c-exec-%d", 'a'+rng.IntN(26), next)
	}

	out := make([]step, 0, steps)
	for range steps {
		s := step{joined: map[string]bool{}}
		switch k := rng.IntN(10); {
		case k < 4 && len(members) < 40 || len(members) == 0: // One or more join.
			for n := 1 + rng.IntN(min(3, 40-len(members))); n > 0; n-- {
				id := newID()
				members = append(members, id)
				s.joined[id] = true
			}
		case k < 8 && len(members) > 1: // One or more leave.
			for n := 1 + rng.IntN(min(3, len(members)-1)); n > 0; n-- {
				i := rng.IntN(len(members))
				members = slices.Delete(members, i, i+1)
			}
			s.left = true
		case k < 9: // Join and leave at once.
			i := rng.IntN(len(members))
			members = slices.Delete(members, i, i+1)
			s.left = true
			id := newID()
			members = append(members, id)
			s.joined[id] = true
		default: // Resize.
			partitions = 1 + rng.IntN(300)
			s.resized = true
		}
		s.partitions = partitions
		s.members = slices.Clone(members)
		rng.Shuffle(len(s.members), func(i, j int) { s.members[i], s.members[j] = s.members[j], s.members[i] })
		out = append(out, s)
	}
	return out
}

// TestAssignProperties replays many random histories and checks, after every
// step, validity, balance and minimal moves, plus the stronger guarantees of
// pure joins and pure leaves.
func TestAssignProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 7))
	histories, steps := 200, 30
	if testing.Short() {
		histories = 50
	}
	for h := range histories {
		var prev rebalance.Assignment
		var prevOwner map[int]string
		prevPartitions := 0
		for i, s := range history(rng, steps) {
			next := rebalance.Assign(s.partitions, s.members, prev)
			owner := checkAssign(t, s.partitions, s.members, prev, next)

			// prev is always a valid assignment here, so Moves agrees
			// with the independent count in checkAssign.
			live := liveSet(s.members)
			if got, want := prev.Moves(next), lowerBound(s.partitions, live, resolvePrev(s.partitions, live, prev))+outOfRange(prev, s.partitions); got != want {
				t.Fatalf("history %d step %d: Moves = %d, want %d", h, i, got, want)
			}

			if !s.resized && prev != nil {
				if prevPartitions != s.partitions {
					t.Fatalf("history %d step %d: partition count changed without resize", h, i)
				}
				for p, o := range owner {
					before := prevOwner[p]
					if o == before {
						continue
					}
					// A pure join only moves partitions to newcomers.
					if !s.left && !s.joined[o] {
						t.Fatalf("history %d step %d: join moved partition %d from %q to surviving %q", h, i, p, before, o)
					}
					// A pure leave only moves the leavers' partitions.
					if len(s.joined) == 0 && live[before] {
						t.Fatalf("history %d step %d: leave moved partition %d from surviving %q to %q", h, i, p, before, o)
					}
				}
			}
			prev, prevOwner, prevPartitions = next, owner, s.partitions
		}
	}
}

// outOfRange counts the partitions prev lists outside [0,partitions), as
// after a shrink. [rebalance.Assignment.Moves] counts them as moved, being
// owned before and not after, while the lower bound only concerns partitions
// in range.
func outOfRange(prev rebalance.Assignment, partitions int) int {
	n := 0
	for _, list := range prev {
		for _, p := range list {
			if p < 0 || p >= partitions {
				n++
			}
		}
	}
	return n
}

// TestJoinMovesOnlyToNewcomer checks, across group sizes and partition counts,
// that when one member joins a balanced group no partition moves between two
// members that both stay.
func TestJoinMovesOnlyToNewcomer(t *testing.T) {
	for partitions := 1; partitions <= 64; partitions++ {
		var members []string
		var prev rebalance.Assignment
		for m := range 20 {
			joiner := fmt.Sprintf("m%02d", (m*7)%20) // Join out of ID order.
			members = append(members, joiner)
			next := rebalance.Assign(partitions, members, prev)
			checkAssign(t, partitions, members, prev, next)
			for p := range partitions {
				before, _ := prev.Owner(p)
				after, _ := next.Owner(p)
				if before != after && after != joiner && prev != nil {
					t.Fatalf("P=%d M=%d: partition %d moved from %q to %q, not to joiner %q", partitions, len(members), p, before, after, joiner)
				}
			}
			prev = next
		}
	}
}

// TestAssignDeterministic checks that neither the order of the members slice,
// duplicates in it, nor the way prev was built changes the result.
func TestAssignDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 43))
	for i := range 200 {
		partitions := rng.IntN(301)
		members := make([]string, 1+rng.IntN(40))
		for j := range members {
			members[j] = fmt.Sprintf("exec-%d", rng.IntN(60))
		}
		prev := randomAssignment(rng, partitions)

		want := rebalance.Assign(partitions, members, prev)
		for range 5 {
			shuffled := slices.Clone(members)
			shuffled = append(shuffled, shuffled[:rng.IntN(len(shuffled))]...) // Extra duplicates.
			rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
			got := rebalance.Assign(partitions, shuffled, rebuild(rng, prev))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d: order changed the result\n got %v\nwant %v", i, got, want)
			}
		}
	}
}

// randomAssignment builds an arbitrary, usually invalid, previous assignment:
// missing and duplicated partitions, out-of-range ones, departed members.
func randomAssignment(rng *rand.Rand, partitions int) rebalance.Assignment {
	a := make(rebalance.Assignment)
	for range rng.IntN(50) {
		id := fmt.Sprintf("exec-%d", rng.IntN(80))
		for range rng.IntN(20) {
			a[id] = append(a[id], rng.IntN(partitions+10)-5)
		}
	}
	return a
}

// rebuild returns a copy of a built by inserting keys in a random order.
func rebuild(rng *rand.Rand, a rebalance.Assignment) rebalance.Assignment {
	ks := keys(a)
	rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	c := make(rebalance.Assignment, len(a))
	for _, k := range ks {
		c[k] = slices.Clone(a[k])
	}
	return c
}

// TestAssignRandomPrev checks the invariants against arbitrary garbage in prev.
func TestAssignRandomPrev(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		partitions := rng.IntN(310) - 10
		members := make([]string, rng.IntN(41))
		for j := range members {
			members[j] = fmt.Sprintf("exec-%d", rng.IntN(60))
		}
		prev := randomAssignment(rng, max(partitions, 0))
		next := rebalance.Assign(partitions, members, prev)
		checkAssign(t, partitions, members, prev, next)
	}
}

func FuzzAssign(f *testing.F) {
	f.Add(int16(6), []byte{0}, []byte{})
	f.Add(int16(6), []byte{0, 1}, []byte{0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5})
	f.Add(int16(7), []byte{0, 1, 2}, []byte{0, 0, 1, 0, 2, 9, 70, 1, 3, 255})
	f.Add(int16(-5), []byte{3, 3, 3}, []byte{3, 1})
	f.Add(int16(300), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{200, 7, 1, 130})
	f.Add(int16(2), []byte{0, 1, 2, 3, 4}, []byte{4, 0, 4, 1, 3, 1})

	f.Fuzz(func(t *testing.T, partitions int16, memberBytes, prevBytes []byte) {
		// Members: each byte names one of 64 IDs, so duplicates happen.
		members := make([]string, 0, min(len(memberBytes), 100))
		for _, b := range memberBytes[:min(len(memberBytes), 100)] {
			members = append(members, fmt.Sprintf("m%d", b%64))
		}
		// prev: byte pairs (member, partition). Members range over 80 IDs,
		// so some have left; partitions are signed, so some are negative.
		prev := make(rebalance.Assignment)
		for i := 0; i+1 < len(prevBytes) && i < 4000; i += 2 {
			id := fmt.Sprintf("m%d", prevBytes[i]%80)
			prev[id] = append(prev[id], int(int8(prevBytes[i+1])))
		}
		p := int(partitions) % 1024

		membersCopy, prevCopy := slices.Clone(members), clone(prev)
		next := rebalance.Assign(p, members, prev)
		if !slices.Equal(members, membersCopy) || !reflect.DeepEqual(prev, prevCopy) {
			t.Fatal("Assign modified its inputs")
		}
		checkAssign(t, p, members, prev, next)

		// Deterministic under reordering of members.
		rng := rand.New(rand.NewPCG(uint64(len(memberBytes)), uint64(len(prevBytes))))
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		if again := rebalance.Assign(p, members, rebuild(rng, prev)); !reflect.DeepEqual(again, next) {
			t.Fatalf("shuffled members changed the result\n got %v\nwant %v", again, next)
		}
	})
}
