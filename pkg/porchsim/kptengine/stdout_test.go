package kptengine

import (
	"context"
	"io"
	"os"
	"testing"
)

// TestNothingOnStdout proves that cloning (into a deployment repository,
// where kpt beta.61's own package context generator would print its config
// type), upgrading and rendering write nothing to standard output, which
// carries variantctl's output. It swaps os.Stdout, so it must not run in
// parallel with other tests.
func TestNothingOnStdout(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	printed := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		printed <- string(b)
	}()

	func() {
		defer func() { os.Stdout = saved }()
		cloned, err := Clone(readPackageDir(t, "upstream-app-v1"), CloneOptions{
			PackagePath: "app-east",
			Deployment:  true,
			Lock:        appV1Lock,
		})
		if err != nil {
			t.Errorf("Clone(...): %v", err)
			return
		}
		if _, err := Render(context.Background(), cloned, RenderOptions{NotBuiltin: SkipNotBuiltin}); err != nil {
			t.Errorf("Render(...): %v", err)
		}
		if _, err := Upgrade(readPackageDir(t, "upstream-app-v1"), readPackageDir(t, "upstream-app-v1"), cloned, appV2Lock); err != nil {
			t.Errorf("Upgrade(...): %v", err)
		}
	}()
	w.Close()
	if out := <-printed; out != "" {
		t.Errorf("standard output got %q, want nothing", out)
	}
}
