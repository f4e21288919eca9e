package deploy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Source is where a deployment's code comes from: a git repository and a
// ref (a branch, a tag, a full ref name or a commit), or a local directory.
type Source struct {
	Git  string `json:"git,omitempty"`
	Ref  string `json:"ref,omitempty"`
	Path string `json:"path,omitempty"`
}

// Limits of a local directory source.
const (
	maxFiles = 100_000
	maxBytes = 1 << 30
)

// gitTimeout bounds each git command.
const gitTimeout = 5 * time.Minute

var revRE = regexp.MustCompile(`^[0-9a-f]{40}$|^[0-9a-f]{64}$`)

// ValidRevision reports whether rev is a revision this package produces: a
// full git commit ID (SHA-1 or SHA-256) or a directory digest, in lower-case
// hex.
func ValidRevision(rev string) bool { return revRE.MatchString(rev) }

// Check returns an error when s is not a usable source: exactly one of Git
// and Path, a ref with Git only, no value that git would read as an option.
func (s Source) Check() error {
	switch {
	case s.Git != "" && s.Path != "":
		return errors.New("give git or path, not both")
	case s.Git == "" && s.Path == "":
		return errors.New("no source: give git (with ref) or path")
	case s.Path != "" && s.Ref != "":
		return errors.New("ref goes with git, not with path")
	case s.Path != "" && !filepath.IsAbs(s.Path):
		return fmt.Errorf("path %q must be absolute", s.Path)
	case strings.HasPrefix(s.Git, "-"):
		return fmt.Errorf("git %q: a repository does not start with '-'", s.Git)
	case strings.HasPrefix(s.Ref, "-") || strings.ContainsAny(s.Ref, " \t\r\n\x00~^:?*[\\") || strings.Contains(s.Ref, ".."):
		return fmt.Errorf("ref %q is not a valid git ref", s.Ref)
	case strings.ContainsAny(s.Git+s.Path, "\r\n\x00"):
		return errors.New("git and path hold no line breaks")
	}
	return nil
}

// ref is s.Ref or HEAD.
func (s Source) ref() string {
	if s.Ref == "" {
		return "HEAD"
	}
	return s.Ref
}

// Resolve returns the revision s is at now: the commit its ref names (git
// ls-remote; a ref that is a full commit ID is that commit), or the digest
// of the directory's files.
func Resolve(ctx context.Context, s Source) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	if s.Path != "" {
		return treeDigest(s.Path)
	}
	if ValidRevision(s.Ref) {
		return s.Ref, nil
	}
	out, err := git(ctx, "", "ls-remote", "--", s.Git, s.ref(), s.ref()+"^{}")
	if err != nil {
		return "", err
	}
	return pickRef(out, s.ref())
}

// pickRef returns the commit that ref names among the lines of git
// ls-remote: the exact name, then a branch, then a tag (peeled).
func pickRef(out []byte, ref string) (string, error) {
	found := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		sha, name, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && ValidRevision(sha) {
			found[name] = sha
		}
	}
	for _, name := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref + "^{}", "refs/tags/" + ref} {
		if sha, ok := found[name]; ok {
			return sha, nil
		}
	}
	return "", fmt.Errorf("ref %q not found in the repository", ref)
}

// git runs git with args in dir and returns its stdout; its error carries
// the end of stderr.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(Environ(os.Environ()), "GIT_TERMINAL_PROMPT=0", "GIT_ALLOW_PROTOCOL=file:git:ssh:http:https",
		"GIT_CONFIG_NOSYSTEM=1", "GCM_INTERACTIVE=never")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitWriter{w: &stderr, n: 4096}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}

// Environ returns env without the LEAT_ variables.
func Environ(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LEAT_") {
			out = append(out, kv)
		}
	}
	return out
}

// limitWriter keeps the first n bytes written to it.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// treeDigest returns the SHA-256 of the files under root: each one's path,
// kind, mode and content (a symbolic link's target), in path order; .git
// directories are left out.
func treeDigest(root string) (string, error) {
	type entry struct {
		rel string
		d   fs.DirEntry
	}
	var entries []entry
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if len(entries) >= maxFiles {
			return fmt.Errorf("more than %d files", maxFiles)
		}
		entries = append(entries, entry{rel, d})
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("path %s: %w", root, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		info, err := e.d.Info()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%q %o\n", filepath.ToSlash(e.rel), info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(root, e.rel))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%q\n", target)
		case info.Mode().IsRegular():
			if total += info.Size(); total > maxBytes {
				return "", fmt.Errorf("path %s: more than %d bytes", root, maxBytes)
			}
			f, err := os.Open(filepath.Join(root, e.rel))
			if err != nil {
				return "", err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
