package e2eutil

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitClient runs the git command line as a person would against the
// server, with no configuration of the machine's.
type gitClient struct {
	t   *testing.T
	dir string
}

func (g gitClient) run(args ...string) string {
	g.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes file with content in the clone and commits it.
func (g gitClient) commit(file, content, message string) {
	g.t.Helper()
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(content), 0o644); err != nil {
		g.t.Fatal(err)
	}
	g.run("add", file)
	g.run("commit", "--quiet", "-m", message)
}

func startGitServer(t *testing.T) *GitServer {
	t.Helper()
	s, err := StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close the git server: %v", err)
		}
	})
	return s
}

// TestGitServerPushCloneFetch: a repository appears on first access with an
// empty commit on main; what one clone pushes, another clone fetches, over
// both protocol versions; a branch can be created and deleted by a push; a
// URL with ".git" names the same repository.
func TestGitServerPushCloneFetch(t *testing.T) {
	s := startGitServer(t)
	work := t.TempDir()
	alice := gitClient{t, work}
	alice.run("clone", "--quiet", s.RepoURL("ns-blueprints"), "alice")
	alice.dir = filepath.Join(work, "alice")
	if branch := alice.run("rev-parse", "--abbrev-ref", "HEAD"); branch != "main" {
		t.Fatalf("a new repository's HEAD is %q, want main", branch)
	}
	if msg := alice.run("log", "--format=%s"); msg != "Empty commit" {
		t.Fatalf("a new repository's history is %q, want one empty commit", msg)
	}
	if files := alice.run("ls-tree", "-r", "--name-only", "HEAD"); files != "" {
		t.Fatalf("a new repository holds files: %q", files)
	}

	alice.commit("Kptfile", "kind: Kptfile\n", "add the Kptfile")
	alice.run("push", "--quiet", "origin", "main")
	pushed := alice.run("rev-parse", "HEAD")

	// Bob clones through the ".git" URL, with protocol version 0.
	bob := gitClient{t, work}
	bob.run("-c", "protocol.version=0", "clone", "--quiet", s.RepoURL("ns-blueprints.git"), "bob")
	bob.dir = filepath.Join(work, "bob")
	if got := bob.run("rev-parse", "HEAD"); got != pushed {
		t.Fatalf("bob's clone is at %s, want alice's push %s", got, pushed)
	}

	// A branch pushed by bob reaches alice by fetch; then bob deletes it.
	bob.run("checkout", "--quiet", "-b", "drafts/app/v1")
	bob.commit("deployment.yaml", "kind: Deployment\n", "a draft")
	bob.run("push", "--quiet", "origin", "drafts/app/v1")
	draft := bob.run("rev-parse", "HEAD")
	alice.run("fetch", "--quiet", "origin")
	if got := alice.run("rev-parse", "origin/drafts/app/v1"); got != draft {
		t.Fatalf("alice fetched drafts/app/v1 at %s, want %s", got, draft)
	}
	bob.run("push", "--quiet", "origin", "--delete", "drafts/app/v1")
	if refs := alice.run("ls-remote", "--heads", "origin"); strings.Contains(refs, "drafts/app/v1") || !strings.Contains(refs, pushed+"\trefs/heads/main") {
		t.Fatalf("after the delete the server's branches are:\n%s", refs)
	}

	// A force push (what Porch does when it rewrites a draft branch) is
	// accepted.
	alice.run("commit", "--quiet", "--amend", "-m", "the Kptfile, reworded")
	alice.run("push", "--quiet", "--force", "origin", "main")
	if refs := bob.run("ls-remote", "origin", "refs/heads/main"); !strings.HasPrefix(refs, alice.run("rev-parse", "HEAD")) {
		t.Fatalf("the force push did not move main: %s", refs)
	}
}

// TestGitServerCreatesEachRepositoryOnce: many first requests for one
// repository at once make one repository, and every client sees the same
// initial commit.
func TestGitServerCreatesEachRepositoryOnce(t *testing.T) {
	s := startGitServer(t)
	const clients = 6
	heads := make([]string, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("git", "ls-remote", s.RepoURL("shared"), "refs/heads/main").CombinedOutput()
			if err != nil {
				t.Errorf("client %d: git ls-remote: %v\n%s", i, err, out)
				return
			}
			heads[i] = strings.Fields(string(out) + " ")[0]
		}()
	}
	wg.Wait()
	for i := 1; i < clients; i++ {
		if heads[i] != heads[0] || heads[i] == "" {
			t.Fatalf("clients saw different main branches: %v", heads)
		}
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "shared" {
		t.Fatalf("the server's root holds %v, want only the repository shared", names)
	}
}

// TestGitServerRefusesOtherPaths: a name outside Porch's alphabet, or no
// repository at all, is answered 404, and nothing is created.
func TestGitServerRefusesOtherPaths(t *testing.T) {
	s := startGitServer(t)
	for _, path := range []string{"/", "/Upper/info/refs", "/a_b/info/refs", "/../etc/info/refs", "/only-a-name"} {
		resp, err := http.Get(s.URL + path + "?service=git-upload-pack")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404", path, resp.Status)
		}
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("refused requests created %d entries in the root", len(entries))
	}
}
