package e2eutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ModuleFile is the path of a file in a Go module at a version, downloaded
// from the Go module proxy into the module cache (go mod download, outside
// any module, so this repository's go.mod is not touched): other projects'
// CRDs come from their own modules.
func ModuleFile(module, version, path string) (string, error) {
	dir, err := os.MkdirTemp("", "e2e-module-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v\n%s%s", module, version, err, stdout.String(), stderr.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	file := filepath.Join(info.Dir, filepath.FromSlash(path))
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("%s@%s has no %s: %w", module, version, path, err)
	}
	return file, nil
}
