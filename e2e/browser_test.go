package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// chromiumHint is the command that installs Chromium on Debian or Ubuntu.
const chromiumHint = "apt-get install -y chromium"

// chromium returns the path of the Chromium binary. When there is none,
// the test is skipped, or fails under CI=true (as a missing redis-server).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("e2e: Chromium is missing (CI=true, so this is a failure; install it with: %s)", chromiumHint)
	}
	t.Skipf("e2e: Chromium is missing; install it with: %s", chromiumHint)
	return ""
}

// browser starts headless Chromium for the test (1440 pixels wide), with
// extra options if any, and returns a context for chromedp actions;
// Chromium stops when the test ends.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.WindowSize(1440, 900),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-device-scale-factor", "1"),
	)
	opts = append(opts, extra...)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first run starts the browser, which lives as long as that run's
	// context: the timeout is for the actions only.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	return tctx
}

// run runs chromedp actions, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element matching sel ("" when none).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	js := `(() => { const e = document.querySelector(` + jsString(sel) + `); return e ? e.innerText.trim() : ""; })()`
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// eval returns the value of a JavaScript expression.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitText waits until the text of sel equals the value of want, which is
// called again at every try (the figures it reads from Redis may move).
func waitText(t *testing.T, ctx context.Context, sel string, want func() string) {
	t.Helper()
	var got, w string
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, w = text(t, ctx, sel), want()
		if got == w {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s shows %q, want %q", sel, got, w)
		}
		tm := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			tm.Stop()
			t.Fatalf("%s shows %q, want %q: %v", sel, got, w, ctx.Err())
		case <-tm.C:
		}
	}
}

// waitTrue waits until a JavaScript condition holds.
func waitTrue(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	redistest.Eventually(t, 15*time.Second, what, func() bool {
		return eval[bool](t, ctx, `Boolean(`+js+`)`)
	})
}

// screenshot saves a full-page PNG to the test's temporary directory and,
// when the variable env names a file, there too.
func screenshot(t *testing.T, ctx context.Context, env string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	paths := []string{filepath.Join(t.TempDir(), "dashboard.png")}
	if p := os.Getenv(env); p != "" {
		paths = append(paths, p)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
