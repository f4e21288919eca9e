package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A Dir is a worker's directory of one deployment's revisions.
type Dir struct {
	root string
}

// Open returns the directory of deployment under root, creating it.
// deployment must be a plain name (no separator, not "." or "..").
func Open(root, deployment string) (*Dir, error) {
	if deployment == "" || deployment == "." || deployment == ".." || strings.ContainsAny(deployment, `/\`+"\x00") {
		return nil, fmt.Errorf("deployment name %q cannot name a directory", deployment)
	}
	d := filepath.Join(root, deployment)
	if err := os.MkdirAll(d, 0o750); err != nil {
		return nil, err
	}
	return &Dir{root: d}, nil
}

// Path is the directory of revision rev.
func (d *Dir) Path(rev string) string { return filepath.Join(d.root, rev) }

// Fetch puts s at revision rev into its directory (Path(rev)), unless it is
// there, and returns that directory.
func (d *Dir) Fetch(ctx context.Context, s Source, rev string) (string, error) {
	if !ValidRevision(rev) {
		return "", fmt.Errorf("revision %q: want a full commit ID or digest in hex", rev)
	}
	if err := s.Check(); err != nil {
		return "", err
	}
	unlock, err := d.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	dst := d.Path(rev)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp, err := os.MkdirTemp(d.root, ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if s.Git != "" {
		err = fetchGit(ctx, s, rev, tmp)
	} else {
		err = fetchPath(s.Path, rev, tmp)
	}
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// fetchGit clones s into dir and checks rev out.
func fetchGit(ctx context.Context, s Source, rev, dir string) error {
	if _, err := git(ctx, "", "clone", "--quiet", "--no-checkout", "--", s.Git, dir); err != nil {
		return err
	}
	if _, err := git(ctx, dir, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", rev); err != nil {
		return fmt.Errorf("revision %s: %w", rev, err)
	}
	head, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(head)); got != rev {
		return fmt.Errorf("checked out %s, not revision %s", got, rev)
	}
	return nil
}

// fetchPath copies the directory src into dir and checks that the copy is
// at rev: a source changed since it was resolved is refused, and the next
// resolution names its new revision.
func fetchPath(src, rev, dir string) error {
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		to := filepath.Join(dir, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.Mkdir(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			return copyFile(p, to, info.Mode().Perm())
		}
		return nil // sockets, devices, pipes: not code
	})
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	got, err := treeDigest(dir)
	if err != nil {
		return err
	}
	if got != rev {
		return errors.New("the source directory changed while it was copied: the next poll names its new revision")
	}
	return nil
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Prune removes the revisions' directories and markers but those of keep.
func (d *Dir) Prune(keep ...string) error {
	unlock, err := d.lock()
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		rev := strings.TrimSuffix(e.Name(), markerSuffix)
		if !ValidRevision(rev) || contains(keep, rev) {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(d.root, e.Name())))
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
