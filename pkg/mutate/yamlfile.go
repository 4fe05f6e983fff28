package mutate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// kptfileName is the Kptfile at the package root; Kptfiles of nested
// packages have a directory in front of it.
const kptfileName = "Kptfile"

// Tags of the scalars this package writes. A scalar written with the string
// tag and no explicit style is quoted by the encoder exactly when it would
// otherwise read back as another type ("true", "1", "null"), so values keep
// their meaning without forcing quotes on every string.
const (
	tagString = "!!str"
	tagMap    = "!!map"
	tagSeq    = "!!seq"
	tagNull   = "!!null"
)

// pkgFiles is a package's files with its YAML files parsed. The original text
// is kept so that untouched files and documents are returned byte for byte.
type pkgFiles struct {
	files map[string]string
	yaml  map[string]*yamlFile
	paths []string // sorted paths of the YAML files, for deterministic walks
}

// yamlFile is one YAML file split into segments at its "---" lines. Only the
// segments a mutation changed are re-encoded.
type yamlFile struct {
	path string
	segs []*segment
}

// segment is the text between two document separators.
type segment struct {
	raw  string       // original text, without the separator line
	sep  string       // the separator line after it (with its newline), "" for the last
	docs []*yaml.Node // documents decoded from raw (usually one)
	// dirty is set by the mutations that changed a node of docs.
	dirty bool
}

// object is one top-level mapping of a YAML file: a KRM resource, usually.
type object struct {
	file string
	seg  *segment
	node *yaml.Node // the mapping
}

// isYAMLFile says which package files hold resources. It follows kpt (and
// Porch): *.yaml, *.yml and Kptfile, by base name, anywhere in the package.
func isYAMLFile(p string) bool {
	base := path.Base(p)
	return base == kptfileName || strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")
}

// parsePackage parses every YAML file of the package; a file that does not
// parse is an error because it may hide an injection point or the package
// context.
func parsePackage(files map[string]string) (*pkgFiles, error) {
	p := &pkgFiles{files: files, yaml: map[string]*yamlFile{}}
	for name := range files {
		if isYAMLFile(name) {
			p.paths = append(p.paths, name)
		}
	}
	sort.Strings(p.paths)
	for _, name := range p.paths {
		f, err := parseYAMLFile(name, files[name])
		if err != nil {
			return nil, err
		}
		p.yaml[name] = f
	}
	return p, nil
}

func parseYAMLFile(name, content string) (*yamlFile, error) {
	f := &yamlFile{path: name}
	raws, seps, err := splitDocuments(content)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, raw := range raws {
		docs, err := decodeDocuments(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: malformed YAML: %w", name, err)
		}
		f.segs = append(f.segs, &segment{raw: raw, sep: seps[i], docs: docs})
	}
	return f, nil
}

// splitDocuments cuts a file at its document separator lines ("---", maybe
// followed by a comment), as kyaml's reader does, so that each document keeps
// its own head comments and can be written back untouched. seps[i] is the
// separator line after raws[i].
func splitDocuments(s string) (raws, seps []string, err error) {
	start := 0
	for pos := 0; pos < len(s); {
		end := strings.IndexByte(s[pos:], '\n')
		lineEnd := len(s)
		if end >= 0 {
			lineEnd = pos + end + 1
		}
		line := strings.TrimRight(s[pos:lineEnd], "\r\n")
		if strings.HasPrefix(line, "---") {
			rest := line[3:]
			switch {
			case rest == "":
			case rest[0] == ' ' || rest[0] == '\t':
				if r := strings.TrimSpace(rest); r != "" && r[0] != '#' {
					return nil, nil, fmt.Errorf("invalid document separator %q: content after a separator is not supported", line)
				}
			default:
				// "---foo" is a plain scalar, not a separator.
				pos = lineEnd
				continue
			}
			raws = append(raws, s[start:pos])
			seps = append(seps, s[pos:lineEnd])
			start = lineEnd
		}
		pos = lineEnd
	}
	raws = append(raws, s[start:])
	seps = append(seps, "")
	return raws, seps, nil
}

// decodeDocuments decodes the documents of one segment. yaml.v3 reports most
// problems as errors but has panicked on odd input before; a panic here
// becomes an error so that no package content can crash the controller.
func decodeDocuments(raw string) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("yaml decoder failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(raw))
	for {
		doc := &yaml.Node{}
		if err := dec.Decode(doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		docs = append(docs, doc)
	}
}

// encodeDocuments writes documents the way kyaml does: two-space indent and
// the sequence indent style the original text used.
func encodeDocuments(docs []*yaml.Node, seqIndent string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("yaml encoder failed: %v", r)
		}
	}()
	var buf bytes.Buffer
	enc := yaml.NewEncoderWithOptions(&buf, &yaml.EncoderOptions{SeqIndent: yaml.SequenceIndentStyle(seqIndent)})
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return "", err
		}
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// render returns the package's files with the changed segments re-encoded.
// A changed segment that encodes to the same text as its original would is
// returned as the original: an edit that ended up setting what was already
// there must not reformat the file.
func (p *pkgFiles) render() (map[string]string, error) {
	out := make(map[string]string, len(p.files))
	maps.Copy(out, p.files)
	for _, name := range p.paths {
		f := p.yaml[name]
		dirty := false
		for _, s := range f.segs {
			dirty = dirty || s.dirty
		}
		if !dirty {
			continue
		}
		var b strings.Builder
		for _, s := range f.segs {
			text, err := s.render()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			b.WriteString(text)
			b.WriteString(s.sep)
		}
		out[name] = b.String()
	}
	return out, nil
}

func (s *segment) render() (string, error) {
	if !s.dirty {
		return s.raw, nil
	}
	style := yaml.DeriveSeqIndentStyle(s.raw)
	edited, err := encodeDocuments(s.docs, style)
	if err != nil {
		return "", err
	}
	origDocs, err := decodeDocuments(s.raw)
	if err != nil {
		return "", err
	}
	orig, err := encodeDocuments(origDocs, style)
	if err != nil {
		return "", err
	}
	if orig == edited {
		return s.raw, nil
	}
	// A segment followed by a separator must end in a newline, or the
	// separator would join its last line.
	if s.sep != "" && !strings.HasSuffix(edited, "\n") {
		edited += "\n"
	}
	return edited, nil
}

// objects returns the top-level mappings of a file, in document order.
func (f *yamlFile) objects() []object {
	var objs []object
	for _, s := range f.segs {
		for _, d := range s.docs {
			if d.Kind != yaml.DocumentNode || len(d.Content) == 0 {
				continue
			}
			n := d.Content[0]
			// A whole document that is an alias cannot be an anchor target
			// of its own file; resolve defensively anyway.
			n = resolve(n)
			if n == nil || n.Kind != yaml.MappingNode {
				continue
			}
			objs = append(objs, object{file: f.path, seg: s, node: n})
		}
	}
	return objs
}

// allObjects walks every object of the package in path order.
func (p *pkgFiles) allObjects() []object {
	var objs []object
	for _, name := range p.paths {
		objs = append(objs, p.yaml[name].objects()...)
	}
	return objs
}

// kptfile returns the root Kptfile object, or found=false when the package
// has no root Kptfile.
func (p *pkgFiles) kptfile() (obj object, found bool, err error) {
	f, ok := p.yaml[kptfileName]
	if !ok {
		return object{}, false, nil
	}
	for _, o := range f.objects() {
		if o.kind() == "Kptfile" {
			return o, true, nil
		}
	}
	return object{}, false, fmt.Errorf("%s: no object of kind Kptfile in the file", kptfileName)
}

func (o object) kind() string       { return scalarField(o.node, "kind") }
func (o object) apiVersion() string { return scalarField(o.node, "apiVersion") }
func (o object) name() string       { return scalarField(resolve(field(o.node, "metadata")), "name") }

// describe names an object in error messages: file, kind and name.
func (o object) describe() string {
	return fmt.Sprintf("%s: %s/%s", o.file, o.kind(), o.name())
}

// annotation returns the value node of a metadata annotation, or nil.
func (o object) annotation(key string) *yaml.Node {
	md := resolve(field(o.node, "metadata"))
	return resolve(field(resolve(field(md, "annotations")), key))
}
