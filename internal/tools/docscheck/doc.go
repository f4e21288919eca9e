// Package docscheck holds the tests that keep leat's documentation true:
// every relative link of README.md, CHANGELOG.md, docs/*.md and the
// examples' README.md files resolves (the file, and the heading or anchor
// after #), every Go code block compiles, README's quickstart is the whole
// of examples/quickstart/main.go, each page stays readable in one sitting
// (README.md under 20 KB, a docs page under 40 KB), and docs/README.md lists
// every page of docs/.
//
// # Go code blocks
//
// A block fenced with ```go is a complete file: it starts with its package
// clause, and the test builds it with go vet, each block a package of a
// throwaway module that requires leat and leattest (as the examples do).
// A block that shows only part of a program is fenced with ```go fragment
// (GitHub still highlights it as Go) and is not compiled.
//
// # Anchors
//
// A link's #anchor must name a heading of the target page as GitHub makes
// its anchors (lower case, spaces as dashes, punctuation dropped, -1, -2
// for repeats), or an <a id="..."> or <a name="..."> in it.
//
// The package has no code of its own; docs/writing-docs.md says the same for
// writers of the pages.
package docscheck
