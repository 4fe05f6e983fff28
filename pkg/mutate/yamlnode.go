package mutate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

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
	if rank := slices.Index(order, key); rank >= 0 {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if r := slices.Index(order, m.Content[i].Value); r > rank {
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
	return ownNode(m, key, yaml.MappingNode, create, order)
}

// ownSequence is ownMapping for lists.
func ownSequence(m *yaml.Node, key string, create bool, order []string) (*yaml.Node, error) {
	return ownNode(m, key, yaml.SequenceNode, create, order)
}

// ownNode is ownMapping for a mapping or a sequence (kind).
func ownNode(m *yaml.Node, key string, kind yaml.Kind, create bool, order []string) (*yaml.Node, error) {
	want, empty := "a map", newMap
	if kind == yaml.SequenceNode {
		want, empty = "a list", newSeq
	}
	v := field(m, key)
	if isNull(v) {
		if !create {
			return nil, nil
		}
		n := empty()
		setField(m, key, n, order)
		return n, nil
	}
	if v.Kind == yaml.AliasNode {
		r := resolve(v)
		if r == nil || r.Kind != kind {
			return nil, fmt.Errorf("%s is %s, not %s", key, kindName(v), want)
		}
		c := deepCopy(r)
		c.Anchor = ""
		setField(m, key, c, order)
		return c, nil
	}
	if v.Kind != kind {
		return nil, fmt.Errorf("%s is %s, not %s", key, kindName(v), want)
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
