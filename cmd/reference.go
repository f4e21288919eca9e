package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// referenceCommand is the hidden "leat docs": it prints the CLI reference,
// docs/cli-reference.md, from the commands' own definitions, so that the
// reference cannot drift from the CLI (a test compares the two; go generate
// ./cmd rewrites the file).
func referenceCommand() *cli.Command {
	return &cli.Command{
		Name:         "docs",
		Usage:        "print the CLI reference in Markdown (docs/cli-reference.md)",
		Hidden:       true,
		Flags:        []cli.Flag{helpFlag()},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c); err != nil {
				return err
			}
			_, err := fmt.Fprint(c.App.Writer, reference(c.App))
			return err
		},
	}
}

// reference returns the Markdown reference of a: its global flags, then
// each visible command and subcommand, depth first, with its arguments,
// description and flags.
func reference(a *cli.App) string {
	var b strings.Builder
	b.WriteString("# CLI reference\n\n")
	b.WriteString("<!-- Generated from the CLI's definitions by `go generate ./cmd` (the hidden `leat docs`); do not edit. -->\n\n")
	b.WriteString("Every command and flag of `" + a.Name + "`, as `" + a.Name + " help COMMAND` shows them. ")
	b.WriteString("The guide to the commands is [CLI](cli.md). A command's flags go before or after its arguments ")
	b.WriteString("(after `--` everything is an argument); global flags go before the command.\n\n")
	b.WriteString("Commands (each section says what the command does):\n\n")
	var index func(prefix string, cmds []*cli.Command, depth int)
	index = func(prefix string, cmds []*cli.Command, depth int) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			name := prefix + " " + c.Name
			fmt.Fprintf(&b, "%s- [`%s`](#%s)\n", strings.Repeat("  ", depth), name, anchor(name))
			index(name, c.Subcommands, depth+1)
		}
	}
	index(a.Name, a.Commands, 0)
	b.WriteString("\n## Global flags\n\n")
	fmt.Fprintf(&b, "`%s [GLOBAL FLAGS] COMMAND [FLAGS] [ARGUMENTS]`: %s.\n", a.Name, a.Usage)
	writeFlags(&b, a.Flags)
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			name := prefix + " " + c.Name
			fmt.Fprintf(&b, "\n## %s\n\n", name)
			usage := name
			if len(c.Subcommands) > 0 {
				usage += " [COMMAND]"
			}
			if hasVisibleFlags(c.Flags) {
				usage += " [FLAGS]"
			}
			if c.ArgsUsage != "" {
				usage += " " + c.ArgsUsage
			}
			fmt.Fprintf(&b, "`%s`: %s.\n", usage, c.Usage)
			if d := strings.TrimSpace(c.Description); d != "" {
				b.WriteString("\n```text\n" + dedent(d) + "\n```\n")
			}
			writeFlags(&b, c.Flags)
			walk(name, c.Subcommands)
		}
	}
	walk(a.Name, a.Commands)
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// anchor is the GitHub anchor of a heading: lower case, spaces as dashes,
// punctuation other than dashes and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// dedent removes the indentation urfave/cli's help adds to descriptions'
// continuation lines.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimPrefix(l, "   "), " ")
	}
	return strings.Join(lines, "\n")
}

// hasVisibleFlags tells whether flags has any flag other than --help.
func hasVisibleFlags(flags []cli.Flag) bool {
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); (!ok || v.IsVisible()) && f.Names()[0] != "help" {
			return true
		}
	}
	return false
}

// writeFlags writes a table of the visible flags, --help left out.
func writeFlags(b *strings.Builder, flags []cli.Flag) {
	if !hasVisibleFlags(flags) {
		return
	}
	b.WriteString("\n| flag | environment | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() || f.Names()[0] == "help" {
			continue
		}
		names := make([]string, 0, len(f.Names()))
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			names = append(names, dash+n)
		}
		flag, env, def, usage := strings.Join(names, ", "), "", "", ""
		if d, ok := f.(cli.DocGenerationFlag); ok {
			usage = d.GetUsage()
			if d.TakesValue() {
				var placeholder string
				placeholder, usage = unquoteUsage(usage)
				flag += " " + placeholder
			}
			if e := d.GetEnvVars(); len(e) > 0 {
				env = "`" + strings.Join(e, "`, `") + "`"
			}
			if d.TakesValue() {
				def = strings.Trim(d.GetDefaultText(), `"`)
			}
		}
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", flag, env, def, cell(usage))
	}
}

// unquoteUsage splits a flag's usage as urfave/cli's help does: the first
// word in back quotes names the flag's value (VALUE when none does), and
// loses its quotes in the text.
func unquoteUsage(usage string) (placeholder, text string) {
	before, rest, ok := strings.Cut(usage, "`")
	if ok {
		if name, after, ok := strings.Cut(rest, "`"); ok {
			return name, before + name + after
		}
	}
	return "VALUE", usage
}

// cell makes s fit in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
