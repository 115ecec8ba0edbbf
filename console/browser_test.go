package console_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The browser tests drive the console in a real headless Chromium:
// Debian's chromium package (installed by .ci/run), never a browser
// downloaded at run time. Where it is absent they skip and say why,
// unless GOXPDL_REQUIRE_BROWSER is set (CI sets it), when they fail.

// chromiumPath is where Debian installs Chromium; GOXPDL_CHROMIUM
// overrides it.
func chromiumPath() string {
	if p := os.Getenv("GOXPDL_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// newBrowser starts a headless Chromium with a fresh profile for one
// test and returns the context its actions run in; it is closed when the
// test ends. JavaScript confirmations (hx-confirm) are accepted.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath()
	if _, err := os.Stat(exe); err != nil {
		if os.Getenv("GOXPDL_REQUIRE_BROWSER") != "" {
			t.Fatalf("GOXPDL_REQUIRE_BROWSER is set but Chromium is not at %s (apt-get install chromium): %v", exe, err)
		}
		t.Skipf("browser test skipped: Chromium is not installed at %s (apt-get install chromium, or set GOXPDL_CHROMIUM)", exe)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	// Listen's fn must not run commands itself: it hands the dialog to a
	// goroutine that ends with the test's context.
	dialogs := make(chan struct{}, 8)
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			select {
			case dialogs <- struct{}{}:
			default:
			}
		}
	}), "starting Chromium")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-dialogs:
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			}
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		<-done
	})
	return ctx
}

// screenshot saves the page as NAME.png in GOXPDL_SCREENSHOTS, when it
// names a directory; a relative one is taken from the module's root, so
// that GOXPDL_SCREENSHOTS=docs/console writes the images docs/console.md
// shows.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("GOXPDL_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(moduleRoot(t), dir)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		require.NotEqual(t, dir, up, "no go.mod above the test's directory")
		dir = up
	}
}

// waitText waits until the element sel shows text. It asks again after
// a navigation (a form's POST and redirect), which chromedp's Poll does
// not survive. When the test's time runs out, the error shows what the
// element held.
func waitText(sel, text string) chromedp.Action[chromedp.Void] {
	expr := `(() => { const e = document.querySelector(` + jsString(sel) + `); return !!e && e.textContent.includes(` + jsString(text) + `); })()`
	shown := `(() => { const e = document.querySelector(` + jsString(sel) + `); return location.pathname + ": " + (e ? e.textContent.trim().slice(0, 500) : "no such element"); })()`
	return waitFor(fmt.Sprintf("%q in %s", text, sel), expr, shown)
}

// waitJS waits until the JavaScript expression expr is true in the page,
// asking again every 100 ms and after navigations; what names the
// condition in the error when the test's time runs out.
func waitJS(what, expr string) chromedp.Action[chromedp.Void] {
	return waitFor(what, expr, "location.pathname")
}

// waitBound bounds one wait, so that a test that fails says where soon
// enough; a page changes within seconds (htmx refreshes the live parts
// every 3 to 5 s).
const waitBound = 90 * time.Second

// waitFor waits until expr is true, at most waitBound; on timeout the
// error adds the string the expression shown evaluates to.
func waitFor(what, expr, shown string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		ctx, cancelWait := context.WithTimeout(ctx, waitBound)
		defer cancelWait()
		tick := time.NewTicker(100 * time.Millisecond) //nolint:forbidigo // the browser runs on the real clock
		defer tick.Stop()
		for {
			if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
				return nil
			}
			select {
			case <-ctx.Done():
				ask, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				got, _ := chromedp.Run(ask, chromedp.Evaluate[string](shown))
				return fmt.Errorf("waiting for %s (the page shows %q): %w", what, got, ctx.Err())
			case <-tick.C:
			}
		}
	})
}

// nodeClass is the JavaScript test that the diagram's activity id has
// every class in has and none in hasNot.
func nodeClass(id string, has, hasNot []string) string {
	var b strings.Builder
	b.WriteString(`(() => { const n = document.querySelector(` + jsString(`#live-instance figure.diagram g[data-activity="`+id+`"]`) + `); if (!n) return false; const c = n.classList;`)
	for _, h := range has {
		b.WriteString(` if (!c.contains(` + jsString(h) + `)) return false;`)
	}
	for _, h := range hasNot {
		b.WriteString(` if (c.contains(` + jsString(h) + `)) return false;`)
	}
	b.WriteString(` return true; })()`)
	return b.String()
}

// eval evaluates the JavaScript expression expr in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(t, err, "evaluating %s", expr)
	return v
}

// location returns the page's URL.
func location(t *testing.T, ctx context.Context) *url.URL {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	return u
}

// idFromPath reads the number after prefix in the page's path
// ("/instances/12" with prefix "/instances/" is 12).
func idFromPath(t *testing.T, ctx context.Context, prefix string) int64 {
	t.Helper()
	p := location(t, ctx).Path
	rest, ok := strings.CutPrefix(p, prefix)
	require.True(t, ok, "the page %s is not under %s", p, prefix)
	id, err := strconv.ParseInt(rest, 10, 64)
	require.NoError(t, err, "the page %s", p)
	return id
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}
