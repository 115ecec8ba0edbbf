package xpdl

import (
	"testing"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/require"
)

// TestNodeNumbers checks the invariant the reader's positions rest on:
// walking the tree with firstElement/nextElement and child/next yields
// each element with its number in document order, whatever text,
// comments, vendor elements and self-closing tags lie between.
func TestNodeNumbers(t *testing.T) {
	t.Parallel()
	src := `<?xml version="1.0"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" xmlns:v="urn:vendor">
  <!-- a comment -->
  <A>text<B/>more<B><C/><C><D/></C></B><v:B/><B/></A>
  <A/>
  <E><![CDATA[<not an element/>]]><F
     x="1"/></E>
</Package>`
	doc, err := parseDocument([]byte(src), (&ReadOpts{}).withDefaults())
	require.NoError(t, err)

	// Number the elements in preorder, as the parser should have.
	numbers := map[*etree.Element]int{}
	var number func(e *etree.Element)
	number = func(e *etree.Element) {
		numbers[e] = len(numbers)
		for _, c := range e.ChildElements() {
			number(c)
		}
	}
	number(doc.root)
	require.Len(t, doc.elems, len(numbers))

	var walk func(e node)
	walk = func(e node) {
		require.Equal(t, numbers[e.Element], e.n, "<%s>", e.Tag)
		for c := firstElement(e); c.Element != nil; c = c.nextElement() {
			walk(c)
		}
		for c := child(e, "B"); c.Element != nil; c = c.next() {
			require.Equal(t, numbers[c.Element], c.n, "<%s> in <%s>", c.Tag, e.Tag)
			require.NotEqual(t, "urn:vendor", c.Space, "child skips vendor elements")
		}
	}
	walk(node{doc.root, doc, 0})

	f := child(child(node{doc.root, doc, 0}, "E"), "F")
	require.Equal(t, Pos{Line: 6, Col: 35}, f.pos(), "after a CDATA section")
	require.Equal(t, Pos{}, child(f, "G").pos(), "the zero node has no position")
}
