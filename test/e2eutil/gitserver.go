package e2eutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// GitServer serves bare git repositories over git's smart HTTP protocol on
// 127.0.0.1, the home of the git Repositories a real Porch reads and
// writes in the end-to-end suite. The protocol itself is git's own: every
// request is handed to `git http-backend` (Debian's git) as a CGI program,
// so clone, fetch and push behave exactly as against any git hosting.
//
// A repository is created on the first request that names it
// (http://127.0.0.1:<port>/<name>, with or without ".git"): a bare
// repository whose HEAD is refs/heads/main, holding one empty commit, so
// that a client finds the branch a Repository's spec.git.branch names. The
// name is one path segment of lower-case letters, digits and '-'; any other
// path is answered 404. Pushes are accepted without authentication.
type GitServer struct {
	// URL is the server's base URL (http://127.0.0.1:<port>, no slash).
	URL string

	root   string
	git    string
	server *http.Server
	served chan error

	// mu serialises the creation of repositories: two first requests for
	// one name must not both run `git init`.
	mu sync.Mutex
}

// StartGitServer serves the repositories under root (created when
// missing) on a free port of 127.0.0.1. It needs git on PATH.
func StartGitServer(root string) (*GitServer, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("start the git server: git is not installed (apt-get install git): %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("start the git server: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the git server: %w", err)
	}
	s := &GitServer{URL: "http://" + l.Addr().String(), root: root, git: git, served: make(chan error, 1)}
	s.server = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.server.Serve(l) }()
	return s, nil
}

// RepoURL is the URL of the repository name.
func (s *GitServer) RepoURL(name string) string { return s.URL + "/" + name }

// Close stops the server, waiting at most 5s for requests in progress.
func (s *GitServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.server.Shutdown(ctx)
	if serveErr := <-s.served; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// ServeHTTP creates the named repository if needed and passes the request
// on to git http-backend.
func (s *GitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	name = strings.TrimSuffix(name, ".git")
	if !ok || !validRepoName(name) {
		http.Error(w, fmt.Sprintf("no repository at %q: a repository is one path segment of a-z, 0-9 and '-'", r.URL.Path), http.StatusNotFound)
		return
	}
	if err := s.ensureRepo(name); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// git http-backend finds the repository at GIT_PROJECT_ROOT + PATH_INFO:
	// the path without ".git", where ensureRepo made it.
	req := r.Clone(r.Context())
	req.URL.Path = "/" + name + "/" + rest
	h := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			// Protocol v2 is negotiated through this header, which a CGI
			// server must hand on as GIT_PROTOCOL.
			"GIT_PROTOCOL=" + r.Header.Get("Git-Protocol"),
			// No user's or system's git configuration applies.
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.root,
		},
	}
	h.ServeHTTP(w, req)
}

// validRepoName: the names Porch's own test git server accepts.
func validRepoName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ensureRepo creates the bare repository name unless it exists: built in a
// temporary directory and renamed into place, so a failure leaves nothing
// half-made behind.
func (s *GitServer) ensureRepo(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.root, name)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(s.root, ".new-"+name+"-")
	if err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	steps := [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", tmp},
		{"-C", tmp, "config", "http.receivepack", "true"},
	}
	for _, args := range steps {
		if _, err := s.run(args...); err != nil {
			return fmt.Errorf("create repository %s: %w", name, err)
		}
	}
	// One empty commit on main, so the branch exists for clients that
	// check out or fetch it.
	tree, err := s.run("-C", tmp, "mktree")
	if err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	commit, err := s.run("-C", tmp, "commit-tree", tree, "-m", "Empty commit")
	if err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	if _, err := s.run("-C", tmp, "update-ref", "refs/heads/main", commit); err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("create repository %s: %w", name, err)
	}
	return nil
}

// run runs git with a fixed identity and no configuration of the machine's,
// and returns its trimmed standard output.
func (s *GitServer) run(args ...string) (string, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Git Server", "GIT_AUTHOR_EMAIL=git-server@example.com",
		"GIT_COMMITTER_NAME=Git Server", "GIT_COMMITTER_EMAIL=git-server@example.com")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			stderr = strings.TrimSpace(string(exit.Stderr))
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}
