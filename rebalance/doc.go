// Package rebalance decides which executor of a processor's consumer group
// owns which partition.
//
// It is the pure, side-effect free heart of a rebalance: it knows nothing
// about Redis, leases or clocks. The caller observes the set of live members
// (executor IDs) and the assignment currently in force, calls [Assign], and
// then uses [Diff] to tell every member which partitions to let go of and
// which to pick up.
//
// # Assignments
//
// An [Assignment] maps a member ID to the ascending list of partitions it
// owns. For a stream with P partitions the partitions are numbered 0 to P-1.
// An assignment produced by [Assign] names every live member as a key, even
// a member that owns nothing (which happens when there are more members than
// partitions), so a member can always tell "I own nothing" apart from "I am
// not part of the group".
//
// The previous assignment handed to [Assign] is treated as a hint, not as a
// trusted value: it may be nil, may name members that have since left, may
// list partitions that are out of range (after the partition count shrank),
// may list a partition under several members, or may leave partitions
// without an owner. Out-of-range partitions and departed members are ignored.
// When several live members claim the same partition, the claimant with the
// smallest ID is taken to be its previous owner and the other claims are
// dropped. [Assignment.Validate] reports such problems for callers that want
// to detect them rather than repair them.
//
// # Guarantees
//
// For a non-empty set of members, the result of [Assign] is:
//
//   - Complete and exclusive: every partition has exactly one owner, and every
//     owner is a live member.
//   - Balanced: the numbers of partitions owned by any two members differ by
//     at most one. With P partitions and M members, every member owns either
//     floor(P/M) or ceil(P/M) partitions; this is its quota.
//   - Sticky: a partition stays with its previous owner whenever that owner is
//     still a member and keeping it does not break balance. More precisely,
//     the number of partitions that change owner is the smallest possible for
//     a balanced result. Only partitions whose owner left, and partitions a
//     member holds beyond its quota, move. The P mod M larger quotas go to
//     the members that can use them to keep a partition, so that no partition
//     moves merely because of which members were picked for the larger quota.
//     In particular, when a member joins a balanced group, partitions only
//     move to the newcomer, never between two members that stay; when a
//     member leaves, only its partitions move.
//   - Deterministic: the result depends only on the partition count, the set
//     of members and the previous assignment. The order of the members slice,
//     duplicate entries in it, and Go's map iteration order make no
//     difference, so every executor that runs [Assign] on the same inputs
//     computes the same answer without further coordination.
//
// # Tie-breaking
//
// Where the guarantees leave a choice, it is made by ordering: a member
// that holds more than its quota keeps its lowest-numbered partitions; larger
// quotas go first to members holding the most partitions, then to members
// with the smallest ID; and partitions that need a new owner are handed out
// in ascending order to the members short of their quota, in ascending order
// of member ID.
package rebalance
