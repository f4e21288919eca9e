package docscheck

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// root is the repository's root, from this package's directory.
const root = "../../.."

// page is a Markdown file of the documentation, split into its text (code
// blocks blanked) and its code blocks.
type page struct {
	path   string // relative to root, with slashes
	text   []string
	blocks []block
}

// block is a fenced code block.
type block struct {
	line int    // of the opening fence, 1-based
	info string // the words after the fence: "go", "go fragment", "sh"
	code string
}

var fence = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*(.*)$")

func readPage(t *testing.T, path string) page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	p := page{path: path}
	var open *block
	var marker, indent string
	for i, line := range strings.Split(string(b), "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case open == nil && m != nil:
			open, marker, indent = &block{line: i + 1, info: strings.TrimSpace(m[3])}, m[2], m[1]
			p.text = append(p.text, "")
		case open != nil && m != nil && strings.HasPrefix(m[2], marker) && m[3] == "":
			p.blocks = append(p.blocks, *open)
			open = nil
			p.text = append(p.text, "")
		case open != nil:
			open.code += strings.TrimPrefix(line, indent) + "\n"
			p.text = append(p.text, "")
		default:
			p.text = append(p.text, line)
		}
	}
	if open != nil {
		t.Errorf("%s:%d: code block never closed", path, open.line)
	}
	return p
}

// pages returns README.md, CHANGELOG.md, docs/*.md and every README.md
// under examples/.
func pages(t *testing.T) []string {
	t.Helper()
	paths := []string{"README.md", "CHANGELOG.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		paths = append(paths, "docs/"+filepath.Base(d))
	}
	err = filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "README.md" {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 10 {
		t.Fatalf("only %d pages found: %q", len(paths), paths)
	}
	return paths
}

var (
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	link       = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s+(\S+)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// slug is GitHub's anchor of a heading's text.
func slug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a page: its headings' and its HTML ones.
func anchors(p page) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range p.text {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Redis Cluster":                 "redis-cluster",
		"`leat tasks` and `inspect`":    "leat-tasks-and-inspect",
		"28 November, evening: a run's": "28-november-evening-a-runs",
		"Security: what leat refuses":   "security-what-leat-refuses",
		"[Tables](concepts.md) in_Go":   "tables-in_go",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every relative link of the pages resolves: the file or directory, and
// the anchor in a Markdown target.
func TestLinksResolve(t *testing.T) {
	cache := map[string]page{}
	load := func(path string) page {
		if p, ok := cache[path]; ok {
			return p
		}
		p := readPage(t, path)
		cache[path] = p
		return p
	}
	checked := 0
	for _, path := range pages(t) {
		p := load(path)
		for i, line := range p.text {
			line = inlineCode.ReplaceAllString(line, "")
			var targets []string
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(line); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: link %q", path, i+1, target)
				file, anchor, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(path), file))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s: leaves the repository", where)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: no such file %s", where, dest)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if !anchors(load(dest))[anchor] {
					t.Errorf("%s: %s has no heading or anchor %q", where, dest, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links checked: the pages were not read", checked)
	}
}

// Every ```go block is a complete file that builds and vets; a part of a
// program is marked ```go fragment. The blocks are built as packages of a
// throwaway module that requires leat and leattest from this repository.
func TestGoBlocksCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := 0
	sources := map[string]string{} // package directory -> where its block is
	for _, path := range pages(t) {
		for _, b := range readPage(t, path).blocks {
			words := strings.Fields(b.info)
			if len(words) == 0 || words[0] != "go" {
				continue
			}
			where := fmt.Sprintf("%s:%d", path, b.line)
			if slices.Contains(words[1:], "fragment") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), where, b.code, parser.PackageClauseOnly)
			if err != nil {
				t.Errorf("%s: a ```go block must be a complete file with its package clause (or be marked ```go fragment): %v", where, err)
				continue
			}
			n++
			pkg := fmt.Sprintf("b%02d", n)
			name := "main.go"
			if strings.HasSuffix(f.Name.Name, "_test") {
				name = "block_test.go"
			}
			if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, pkg, name), []byte(b.code), 0o644); err != nil {
				t.Fatal(err)
			}
			sources[pkg] = where
		}
	}
	if n == 0 {
		t.Fatal("no ```go block found: README's quickstart is one")
	}
	// The examples' module lists every module a block may need; it is
	// copied with the paths of this repository made absolute.
	mod, err := os.ReadFile(filepath.Join(root, "examples", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := strings.Replace(string(mod), "module github.com/leatdev/leat/examples", "module docblocks.example", 1)
	gomod = strings.ReplaceAll(gomod, "=> ../leattest", "=> "+filepath.Join(abs, "leattest"))
	gomod = strings.ReplaceAll(gomod, "=> ../", "=> "+abs)
	sum, err := os.ReadFile(filepath.Join(root, "examples", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"go.mod": gomod, "go.sum": string(sum)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := string(out)
		for pkg, where := range sources { // name the pages, not the temporary packages
			msg = strings.ReplaceAll(msg, "docblocks.example/"+pkg, where)
			msg = strings.ReplaceAll(msg, pkg+"/", where+": ")
		}
		t.Errorf("the ```go blocks do not build and vet: %v\n%s", err, msg)
	}
}

// README's quickstart is the whole of examples/quickstart/main.go, which
// its own test runs, and is short.
func TestReadmeQuickstartIsTheExample(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(want, []byte("\n")); n >= 80 {
		t.Errorf("examples/quickstart/main.go has %d lines: keep it under 80", n)
	}
	for _, b := range readPage(t, "README.md").blocks {
		if b.info == "go" {
			if b.code != string(want) {
				t.Errorf("README.md:%d: the first ```go block is not examples/quickstart/main.go", b.line)
			}
			return
		}
	}
	t.Error("README.md has no ```go block")
}

// Each page reads in one sitting, and the index lists every page of docs/.
func TestPagesAreShortAndIndexed(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pages(t) {
		fi, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		limit := int64(40 << 10)
		if path == "README.md" {
			limit = 20 << 10
		}
		if path != "CHANGELOG.md" && fi.Size() >= limit {
			t.Errorf("%s is %d bytes: keep it under %d (split it, or move history to git)", path, fi.Size(), limit)
		}
		if name, ok := strings.CutPrefix(path, "docs/"); ok && name != "README.md" && !bytes.Contains(index, []byte("]("+name+")")) {
			t.Errorf("docs/README.md does not list %s", path)
		}
	}
}

// leat is released under the MIT License, held by its authors.
func TestLicense(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MIT License\n", "Copyright (c) 2026 The leat authors\n", "THE SOFTWARE IS PROVIDED \"AS IS\""} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
}
