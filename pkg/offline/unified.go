package offline

import (
	"fmt"
	"sort"
	"strings"
)

// UnifiedDiff returns the difference between two versions of a package's
// files in unified format (as diff -u and git print it), file by file in
// path order, with three lines of context; "" when they are the same.
// aName and bName prefix the paths in the --- and +++ lines; a file only
// on one side is compared with /dev/null.
func UnifiedDiff(aName, bName string, a, b map[string]string) string {
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out strings.Builder
	for _, p := range sorted {
		before, inA := a[p]
		after, inB := b[p]
		if inA && inB && before == after {
			continue
		}
		from, to := aName+"/"+p, bName+"/"+p
		if !inA {
			from = "/dev/null"
		}
		if !inB {
			to = "/dev/null"
		}
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
		writeHunks(&out, splitLines(before), splitLines(after))
	}
	return out.String()
}

// line is one line of a file; last marks a final line with no newline.
type line struct {
	text      string
	noNewline bool
}

func splitLines(s string) []line {
	if s == "" {
		return nil
	}
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([]line, len(parts))
	for i, p := range parts {
		out[i] = line{text: strings.TrimSuffix(p, "\n"), noNewline: !strings.HasSuffix(p, "\n")}
	}
	return out
}

// edit is one step of an edit script: keep a[i]=b[j], delete a[i] or
// insert b[j].
type edit struct {
	op   byte // ' ', '-', '+'
	i, j int
}

// maxEditDistance bounds the work of the diff: beyond it (files that have
// little in common) the whole file is shown as replaced.
const maxEditDistance = 4000

// editScript is Myers' O((N+M)D) shortest edit script between a and b.
func editScript(a, b []line) []edit {
	n, m := len(a), len(b)
	max := n + m
	if max == 0 {
		return nil
	}
	limit := max
	if limit > maxEditDistance {
		limit = maxEditDistance
	}
	offset := max
	v := make([]int, 2*max+2)
	var trace [][]int
	found := -1
	for d := 0; d <= limit && found < 0; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[offset+k-1] < v[offset+k+1]) {
				x = v[offset+k+1]
			} else {
				x = v[offset+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[offset+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		// Too different: everything out, everything in.
		out := make([]edit, 0, n+m)
		for i := range a {
			out = append(out, edit{'-', i, 0})
		}
		for j := range b {
			out = append(out, edit{'+', n, j})
		}
		return out
	}
	// Walk back through the saved frontiers.
	var rev []edit
	x, y := n, m
	for d := found; d > 0; d-- {
		vd := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && vd[offset+k-1] < vd[offset+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vd[offset+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{' ', x, y})
		}
		if x == prevX {
			y--
			rev = append(rev, edit{'+', x, y})
		} else {
			x--
			rev = append(rev, edit{'-', x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{' ', x, y})
	}
	out := make([]edit, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}

const contextLines = 3

// writeHunks writes the @@ hunks of the edit script from a to b.
func writeHunks(out *strings.Builder, a, b []line) {
	script := editScript(a, b)
	for start := 0; start < len(script); {
		// Find the next change.
		for start < len(script) && script[start].op == ' ' {
			start++
		}
		if start == len(script) {
			return
		}
		// The hunk runs from contextLines before it to contextLines after
		// the last change that is within 2*contextLines of the previous.
		from := start - contextLines
		if from < 0 {
			from = 0
		}
		end := start
		for i := start; i < len(script); i++ {
			if script[i].op != ' ' {
				end = i
			} else if i-end > 2*contextLines {
				break
			}
		}
		to := end + contextLines + 1
		if to > len(script) {
			to = len(script)
		}
		hunk := script[from:to]
		aStart, bStart, aLen, bLen := -1, -1, 0, 0
		for _, e := range hunk {
			if aStart < 0 {
				aStart, bStart = e.i, e.j
			}
			switch e.op {
			case ' ':
				aLen++
				bLen++
			case '-':
				aLen++
			case '+':
				bLen++
			}
		}
		fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, e := range hunk {
			var l line
			switch e.op {
			case ' ', '-':
				l = a[e.i]
			case '+':
				l = b[e.j]
			}
			out.WriteByte(e.op)
			out.WriteString(l.text)
			out.WriteByte('\n')
			if l.noNewline {
				out.WriteString("\\ No newline at end of file\n")
			}
		}
		start = to
	}
}

// hunkRange is a hunk's "start,length" (1-based; an empty range names
// the line before it, as diff -u does).
func hunkRange(start, length int) string {
	switch length {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	default:
		return fmt.Sprintf("%d,%d", start+1, length)
	}
}
