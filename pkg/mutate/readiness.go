package mutate

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// condition is one Kptfile status condition this package writes.
type condition struct {
	typ, status, reason, message string
}

var conditionOrder = []string{"type", "status", "reason", "message"}

// setConditions writes the injection conditions into the Kptfile's
// status.conditions. Conditions of other types stay where they are; ours are
// updated in place (keeping their position and comments), and new ones are
// appended sorted by type, so the list is stable across reconciles.
func setConditions(kf object, conds []condition) error {
	if len(conds) == 0 {
		return nil
	}
	list, err := ownKptfileList(kf, "status", "conditions")
	if err != nil {
		return err
	}
	want := map[string]condition{}
	for _, c := range conds {
		want[c.typ] = c
	}
	changed := false
	seen := map[string]bool{}
	content := list.Content[:0:0]
	for _, item := range list.Content {
		m := resolve(item)
		typ, _ := scalarValue(field(m, "type"))
		c, ours := want[typ]
		if m == nil || m.Kind != yaml.MappingNode || !ours {
			content = append(content, item)
			continue
		}
		if seen[typ] {
			// A second condition of one of our types would contradict the
			// first; Porch mirrors only one.
			changed = true
			continue
		}
		seen[typ] = true
		if item.Kind == yaml.AliasNode {
			m = deepCopy(m)
			item = m
			changed = true
		}
		if setString(m, "status", c.status, conditionOrder) {
			changed = true
		}
		if setString(m, "reason", c.reason, conditionOrder) {
			changed = true
		}
		if setString(m, "message", c.message, conditionOrder) {
			changed = true
		}
		content = append(content, item)
	}
	sorted := append([]condition(nil), conds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].typ < sorted[j].typ })
	for _, c := range sorted {
		if seen[c.typ] {
			continue
		}
		m := newMap()
		setString(m, "type", c.typ, conditionOrder)
		setString(m, "status", c.status, conditionOrder)
		setString(m, "reason", c.reason, conditionOrder)
		setString(m, "message", c.message, conditionOrder)
		content = append(content, m)
		changed = true
	}
	if changed {
		list.Content = content
		kf.seg.dirty = true
	}
	return nil
}

// addReadinessGates adds a gate for each required injection point to the
// Kptfile's info.readinessGates. Gates are never removed: people and other
// automation may have added gates for optional points, and a point that went
// away should still be looked at by a person. When a gate is added the list
// is rewritten sorted by conditionType without duplicates (reusing the
// existing entries), as the reference does; a list that needs no new gate is
// left as it is.
func addReadinessGates(kf object, types []string) error {
	if len(types) == 0 {
		return nil
	}
	list, err := ownKptfileList(kf, "info", "readinessGates")
	if err != nil {
		return err
	}
	byType := map[string]*yaml.Node{}
	var untyped []*yaml.Node
	for _, item := range list.Content {
		typ, ok := scalarValue(field(resolve(item), "conditionType"))
		if !ok {
			untyped = append(untyped, item)
			continue
		}
		if _, dup := byType[typ]; !dup {
			byType[typ] = item
		}
	}
	missing := false
	for _, t := range types {
		if _, ok := byType[t]; !ok {
			missing = true
			n := newMap()
			setString(n, "conditionType", t, nil)
			byType[t] = n
		}
	}
	if !missing {
		return nil
	}
	content := make([]*yaml.Node, 0, len(byType)+len(untyped))
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		content = append(content, byType[t])
	}
	// Entries without a conditionType are not ours to judge; keep them.
	content = append(content, untyped...)
	list.Content = content
	kf.seg.dirty = true
	return nil
}

// ownKptfileList returns the list at section.field of the Kptfile (say
// status.conditions), creating both when missing.
func ownKptfileList(kf object, section, field string) (*yaml.Node, error) {
	m, err := ownMapping(kf.node, section, true, kptfileOrder)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kf.describe(), err)
	}
	list, err := ownSequence(m, field, true, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %s.%w", kf.describe(), section, err)
	}
	return list, nil
}
