package rebalance_test

import (
	"fmt"

	"github.com/leatdev/leat/rebalance"
)

func ExampleAssign() {
	const partitions = 6

	// The first executor to join owns everything.
	one := rebalance.Assign(partitions, []string{"exec-a"}, nil)
	fmt.Println(one)

	// A second executor takes half; exec-a keeps the other half.
	two := rebalance.Assign(partitions, []string{"exec-b", "exec-a"}, one)
	release, acquire := rebalance.Diff(one, two, "exec-a")
	fmt.Println(two, "moves:", one.Moves(two), "exec-a releases", release, "acquires", acquire)

	// A third executor takes a third, one partition from each of the others.
	three := rebalance.Assign(partitions, []string{"exec-a", "exec-b", "exec-c"}, two)
	fmt.Println(three, "moves:", two.Moves(three))

	// When exec-b leaves, only its partitions move.
	left := rebalance.Assign(partitions, []string{"exec-c", "exec-a"}, three)
	fmt.Println(left, "moves:", three.Moves(left))
	fmt.Println(left.Validate(partitions))

	// Output:
	// map[exec-a:[0 1 2 3 4 5]]
	// map[exec-a:[0 1 2] exec-b:[3 4 5]] moves: 3 exec-a releases [3 4 5] acquires []
	// map[exec-a:[0 1] exec-b:[3 4] exec-c:[2 5]] moves: 2
	// map[exec-a:[0 1 3] exec-c:[2 4 5]] moves: 2
	// <nil>
}
