package input

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// PackageFlag is a parsed --package REPO/PACKAGE[@REVISION]=DIR.
type PackageFlag struct {
	Repo, Package string
	Revision      int
	Dir           string
}

// ParsePackageFlag parses REPO/PACKAGE[@REVISION]=DIR.
func ParsePackageFlag(v string) (PackageFlag, error) {
	bad := func(why string) error {
		return fmt.Errorf("--package %q: %s; want REPO/PACKAGE[@REVISION]=DIR, for example blueprints/app@2=./app", v, why)
	}
	ref, dir, ok := strings.Cut(v, "=")
	if !ok || dir == "" {
		return PackageFlag{}, bad("no =DIR")
	}
	f := PackageFlag{Revision: 1, Dir: dir}
	if at := strings.LastIndex(ref, "@"); at >= 0 {
		n, err := strconv.Atoi(ref[at+1:])
		if err != nil || n < 1 {
			return PackageFlag{}, bad(fmt.Sprintf("revision %q is not a number of 1 or more", ref[at+1:]))
		}
		f.Revision, ref = n, ref[:at]
	}
	repo, pkg, ok := strings.Cut(ref, "/")
	if !ok || repo == "" || pkg == "" {
		return PackageFlag{}, bad("no REPO/PACKAGE")
	}
	if msgs := validation.IsDNS1123Label(repo); len(msgs) > 0 {
		return PackageFlag{}, bad(fmt.Sprintf("repository name %q: %s", repo, strings.Join(msgs, "; ")))
	}
	f.Repo, f.Package = repo, strings.Trim(pkg, "/")
	return f, nil
}

// ReadPackageDir reads a kpt package directory: every regular file below
// it (hidden directories such as .git aside), keyed by slash-separated
// relative path. It must hold a Kptfile; files must be text.
func ReadPackageDir(dir string) (map[string]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "Kptfile")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a kpt package: it has no Kptfile", dir)
		}
		return nil, err
	}
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !utf8.Valid(data) {
			return fmt.Errorf("%s is not text (UTF-8); a package revision holds text files only", path)
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
