package mutate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
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
	for k, v := range p.files {
		out[k] = v
	}
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

// resolve follows aliases to the node they name. yaml.v3 refuses recursive
// anchors, but the loop is bounded anyway.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// field returns the value node of key in mapping m (not resolved), or nil
// when m is not a mapping or has no such key.
func field(m *yaml.Node, key string) *yaml.Node {
	if i := fieldIndex(m, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}

// fieldIndex is the index of key's key node in m.Content, or -1.
func fieldIndex(m *yaml.Node, key string) int {
	if m == nil || m.Kind != yaml.MappingNode {
		return -1
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind == yaml.ScalarNode && k.Value == key {
			return i
		}
	}
	return -1
}

// scalarField is the string value of a scalar field, "" when absent or not a
// scalar.
func scalarField(m *yaml.Node, key string) string {
	v, _ := scalarValue(field(m, key))
	return v
}

// scalarValue is the value of a non-null scalar node.
func scalarValue(n *yaml.Node) (string, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == tagNull {
		return "", false
	}
	return n.Value, true
}

// isNull says whether a field value is absent or explicitly null, both of
// which mean "nothing there" for the lists and maps this package edits.
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == tagNull)
}

func newString(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tagString, Value: s}
}

func newMap() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: tagMap} }

func newSeq() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Tag: tagSeq} }

// kindName names a node kind for error messages.
func kindName(n *yaml.Node) string {
	n = resolve(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	default:
		return "an unsupported node"
	}
}

// setField sets m[key] = v. An existing key keeps its place and its comments
// (those on the key node, and those on the old value are moved to the new
// one); a new key goes before the first existing key that order lists after
// it, so that new fields land where kpt would write them, else at the end.
func setField(m *yaml.Node, key string, v *yaml.Node, order []string) {
	if i := fieldIndex(m, key); i >= 0 {
		old := m.Content[i+1]
		if old != v {
			v.HeadComment, v.LineComment, v.FootComment = old.HeadComment, old.LineComment, old.FootComment
			m.Content[i+1] = v
		}
		return
	}
	pos := len(m.Content)
	if rank := indexOf(order, key); rank >= 0 {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if r := indexOf(order, m.Content[i].Value); r > rank {
				pos = i
				break
			}
		}
	}
	m.Content = append(m.Content, nil, nil)
	copy(m.Content[pos+2:], m.Content[pos:])
	m.Content[pos], m.Content[pos+1] = newString(key), v
}

// removeField deletes every occurrence of key from m and says whether there
// was one.
func removeField(m *yaml.Node, key string) bool {
	removed := false
	for i := fieldIndex(m, key); i >= 0; i = fieldIndex(m, key) {
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
		removed = true
	}
	return removed
}

// setString sets a string field, leaving the node alone when it already
// holds the value so that its quoting and comments stay as they are. A
// plain `True` is a boolean, not the string "True", and is replaced. It
// reports whether it changed anything.
func setString(m *yaml.Node, key, value string, order []string) bool {
	if n := resolve(field(m, key)); n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == tagString && n.Value == value {
		return false
	}
	setField(m, key, newString(value), order)
	return true
}

// ownMapping returns the mapping stored under key in m, creating it (when
// create is set) if it is absent or null; nil and no error means absent and
// not created. A mapping reached through an alias is replaced by a copy
// first, so an edit never leaks into the other places that share the anchor.
func ownMapping(m *yaml.Node, key string, create bool, order []string) (*yaml.Node, error) {
	v := field(m, key)
	if isNull(v) {
		if !create {
			return nil, nil
		}
		n := newMap()
		setField(m, key, n, order)
		return n, nil
	}
	if v.Kind == yaml.AliasNode {
		r := resolve(v)
		if r == nil || r.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s is %s, not a map", key, kindName(v))
		}
		c := deepCopy(r)
		c.Anchor = ""
		setField(m, key, c, order)
		return c, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is %s, not a map", key, kindName(v))
	}
	return v, nil
}

// ownSequence is ownMapping for lists.
func ownSequence(m *yaml.Node, key string, create bool, order []string) (*yaml.Node, error) {
	v := field(m, key)
	if isNull(v) {
		if !create {
			return nil, nil
		}
		n := newSeq()
		setField(m, key, n, order)
		return n, nil
	}
	if v.Kind == yaml.AliasNode {
		r := resolve(v)
		if r == nil || r.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s is %s, not a list", key, kindName(v))
		}
		c := deepCopy(r)
		c.Anchor = ""
		setField(m, key, c, order)
		return c, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s is %s, not a list", key, kindName(v))
	}
	return v, nil
}

// deepCopy copies a node tree. Aliases are copied as aliases (they still
// name their anchors); anchors inside the copy are dropped so the document
// never defines one twice.
func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Anchor = ""
	if n.Kind == yaml.AliasNode {
		c.Anchor = n.Anchor
		return &c
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = deepCopy(child)
	}
	return &c
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// toNode converts a JSON-shaped Go value (API structs, unstructured content)
// into a block-style YAML node. Going through JSON keeps the json field names
// and struct field order of API types; map keys come out sorted.
func toNode(v interface{}) (*yaml.Node, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	docs, err := decodeDocuments(string(b))
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 || len(docs[0].Content) != 1 {
		return nil, fmt.Errorf("unexpected YAML for %s", b)
	}
	n := docs[0].Content[0]
	plain(n)
	return n, nil
}

// plain clears the flow and quoting styles JSON input gives every node, so
// the result is written in block style like the rest of the file; the string
// tag keeps ambiguous strings quoted.
func plain(n *yaml.Node) {
	n.Style = 0
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		plain(c)
	}
}

// canonical turns a node or a Go value into the generic JSON form, so that
// "the package already holds this value" can be decided regardless of YAML
// formatting. ok=false when the value has no JSON form (non-string keys,
// NaN): such a value is never equal to anything this package writes.
func canonical(v interface{}) (out interface{}, ok bool) {
	if n, isNode := v.(*yaml.Node); isNode {
		if n == nil {
			return nil, true
		}
		var decoded interface{}
		if err := safeDecode(n, &decoded); err != nil {
			return nil, false
		}
		v = decoded
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, false
	}
	return out, true
}

func safeDecode(n *yaml.Node, out interface{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml decode failed: %v", r)
		}
	}()
	return n.Decode(out)
}

// semanticEqual says whether a node already holds the given value.
func semanticEqual(n *yaml.Node, v interface{}) bool {
	a, ok := canonical(n)
	if !ok {
		return false
	}
	b, ok := canonical(v)
	if !ok {
		return false
	}
	return reflect.DeepEqual(a, b)
}
