package xpdl

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"

	"github.com/beevik/etree"
	"golang.org/x/net/html/charset"
)

// Default limits for hostile input; see ReadOpts.
const (
	DefaultMaxBytes    = 16 << 20
	DefaultMaxDepth    = 128
	DefaultMaxAttrs    = 256
	DefaultMaxElements = 2_000_000
)

// ReadOpts are the options for Read and Load. The zero value is ready to
// use and applies the default limits.
type ReadOpts struct {
	// Name is the source name used in positions and problems when reading
	// from an io.Reader ("" reads as "<input>").
	Name string
	// MaxBytes limits the size of one document (default 16 MiB).
	MaxBytes int64
	// MaxDepth limits element nesting (default 128).
	MaxDepth int
	// MaxAttrs limits the attributes of one element (default 256).
	MaxAttrs int
	// MaxElements limits the elements of one document (default 2,000,000).
	MaxElements int
}

func (o *ReadOpts) withDefaults() ReadOpts {
	var c ReadOpts
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "<input>"
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if c.MaxAttrs <= 0 {
		c.MaxAttrs = DefaultMaxAttrs
	}
	if c.MaxElements <= 0 {
		c.MaxElements = DefaultMaxElements
	}
	return c
}

// document is an XML document parsed into an etree tree. Its elements are
// numbered in document order, the root being 0; the number indexes what
// the tree does not hold (see elemInfo) and the raw inner XML of elements
// whose child content the model keeps verbatim (ExtendedAttribute).
type document struct {
	root  *etree.Element
	elems []elemInfo
	raw   map[int]string
}

// elemInfo is what a document knows about one of its elements besides
// the tree: where it starts in the source, and the number of the first
// element after its subtree, which is its next sibling's if it has one.
type elemInfo struct {
	pos  Pos
	next int
}

// node is an element of a document with its number, which child and next
// (read.go) keep track of while they walk the tree. The zero node stands
// for "no such element".
type node struct {
	*etree.Element
	doc *document
	n   int
}

// pos returns the source position of the element, or the zero Pos for the
// zero node.
func (e node) pos() Pos {
	if e.Element == nil {
		return Pos{}
	}
	return e.doc.elems[e.n].pos
}

// rawInnerTag is the local name of the elements whose inner XML is kept
// verbatim.
const rawInnerTag = "ExtendedAttribute"

// arena allocates the tree's elements, attributes, text and child lists in
// blocks rather than one by one (etree's constructors allocate each, and
// grow attribute and child lists by appending): a large package has
// hundreds of thousands of elements. The tree is discarded once read, so
// a block outliving some of its items costs nothing.
type arena struct {
	elements block[etree.Element]
	texts    block[etree.CharData]
	attrs    block[etree.Attr]
	tokens   block[etree.Token]
}

func (a *arena) element(space, tag string) *etree.Element {
	e := &a.elements.take(1)[0]
	e.Space, e.Tag = space, tag
	return e
}

func (a *arena) text(data string) *etree.CharData {
	t := &a.texts.take(1)[0]
	t.Data = data
	return t
}

// attrList returns an empty attribute list with room for n attributes.
func (a *arena) attrList(n int) []etree.Attr {
	if n == 0 {
		return nil
	}
	return a.attrs.take(n)[:0]
}

// tokenList returns an empty child list with room for n tokens.
func (a *arena) tokenList(n int) []etree.Token { return a.tokens.take(n)[:0] }

// maxBlock is the most items of one kind an arena allocates at once.
const maxBlock = 512

// block hands out items of one kind from allocations that double in size
// up to maxBlock, so that a small document does not pay for a large one's
// blocks.
type block[T any] struct {
	free []T
	size int // of the last allocation
}

// take returns n zero items, with no room to append beyond them.
func (b *block[T]) take(n int) []T {
	if n > len(b.free) {
		b.size = min(max(2*b.size, 8), maxBlock)
		b.free = make([]T, max(n, b.size))
	}
	items := b.free[:n:n]
	b.free = b.free[n:]
	return items
}

// parseDocument reads src into a tree. Element tags are local names and
// Space holds the namespace URI (not a prefix), so lookups are independent
// of the prefixes an exporter chose. It enforces the limits of opts and
// rejects DOCTYPE declarations.
func parseDocument(src []byte, opts ReadOpts) (*document, error) {
	fail := func(line, col int, sentinel error, format string, args ...any) error {
		return &SyntaxError{File: opts.Name, Pos: Pos{line, col}, Msg: fmt.Sprintf(format, args...), Err: sentinel}
	}
	if int64(len(src)) > opts.MaxBytes {
		return nil, fail(1, 1, ErrTooLarge, "input is larger than the limit of %d bytes", opts.MaxBytes)
	}

	src, err := toUTF8(src)
	if err != nil {
		return nil, fail(1, 1, ErrMalformed, "%v", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(src))
	// The input is UTF-8 by now, whatever its declaration says, so that
	// byte offsets into src match the decoder's (ExtendedAttribute content
	// is sliced from src).
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	// Every element starts with a '<', so their count bounds the elements
	// and sizes their table once. End tags and comments count too (about
	// 1.6 '<' per element in XPDL), so the bound is capped by the limit
	// on elements. Counting "</" as well would tighten it, but costs ten
	// times more than the memory it saves.
	estimate := bytes.Count(src, []byte("<"))
	doc := &document{elems: make([]elemInfo, 0, min(estimate, opts.MaxElements)), raw: make(map[int]string)}
	var ar arena
	// RawToken leaves namespaces and tag matching to us: cheaper than
	// Token, which resolves every name through maps and copies it.
	type frame struct {
		el       *etree.Element
		n        int      // the element's number
		rawName  xml.Name // as written, for matching the end tag
		rawStart int64    // inner start offset of a raw-content element, -1 otherwise
		bindings int      // namespace bindings this element declared
		kids     int      // where the element's children start in kids
	}
	type binding struct{ prefix, uri string }
	var (
		stack []frame
		ns    []binding
		// kids holds the children of the open elements, each element's
		// after its ancestors', until the element ends and gets a child
		// list of the right size.
		kids []etree.Token
	)
	resolve := func(prefix string) string {
		for i := len(ns) - 1; i >= 0; i-- {
			if ns[i].prefix == prefix {
				return ns[i].uri
			}
		}
		return ""
	}
	for {
		line, col := dec.InputPos()
		before := dec.InputOffset()
		tok, err := dec.RawToken()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			var se *xml.SyntaxError
			// The decoder stops where it noticed the fault; report there.
			line, col = dec.InputPos()
			if errors.As(err, &se) {
				if se.Line != line {
					line, col = se.Line, 1
				}
				return nil, fail(line, col, ErrMalformed, "malformed XML: %s", se.Msg)
			}
			return nil, fail(line, col, ErrMalformed, "malformed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(doc.elems) >= opts.MaxElements {
				return nil, fail(line, col, ErrTooManyElements, "more than %d elements", opts.MaxElements)
			}
			if len(stack) >= opts.MaxDepth {
				return nil, fail(line, col, ErrTooDeep, "element <%s> nested deeper than the limit of %d", t.Name.Local, opts.MaxDepth)
			}
			if len(t.Attr) > opts.MaxAttrs {
				return nil, fail(line, col, ErrTooManyAttrs, "element <%s> has %d attributes, more than the limit of %d", t.Name.Local, len(t.Attr), opts.MaxAttrs)
			}
			f := frame{n: len(doc.elems), rawName: t.Name, rawStart: -1}
			attrs := 0
			for _, a := range t.Attr {
				switch {
				case a.Name.Space == "xmlns":
					ns = append(ns, binding{a.Name.Local, a.Value})
					f.bindings++
				case a.Name.Space == "" && a.Name.Local == "xmlns":
					ns = append(ns, binding{"", a.Value})
					f.bindings++
				case a.Name.Space == "":
					attrs++
				}
			}
			space := resolve(t.Name.Space)
			if t.Name.Space != "" && space == "" {
				return nil, fail(line, col, ErrMalformed, "malformed XML: undeclared namespace prefix %q", t.Name.Space)
			}
			var el *etree.Element
			if len(stack) == 0 {
				if doc.root != nil {
					return nil, fail(line, col, ErrMalformed, "malformed XML: more than one root element")
				}
				// NewElement, so that the root is a root to etree too.
				el = etree.NewElement(t.Name.Local)
				el.Space = space
				doc.root = el
			} else {
				el = ar.element(space, t.Name.Local)
				kids = append(kids, el)
			}
			el.Attr = ar.attrList(attrs)
			for _, a := range t.Attr {
				// Only unqualified attributes belong to XPDL; vendor
				// (xpdExt:, g360:) and xmlns attributes are dropped.
				if a.Name.Space == "" && a.Name.Local != "xmlns" {
					el.CreateAttr(a.Name.Local, a.Value)
				}
			}
			doc.elems = append(doc.elems, elemInfo{pos: Pos{line, col}})
			f.el, f.kids = el, len(kids)
			if t.Name.Local == rawInnerTag {
				f.rawStart = dec.InputOffset()
			}
			stack = append(stack, f)
		case xml.EndElement:
			if len(stack) == 0 {
				return nil, fail(line, col, ErrMalformed, "malformed XML: unexpected end element </%s>", qualified(t.Name))
			}
			top := &stack[len(stack)-1]
			if t.Name != top.rawName {
				return nil, fail(line, col, ErrMalformed, "malformed XML: element <%s> closed by </%s>", qualified(top.rawName), qualified(t.Name))
			}
			if own := kids[top.kids:]; len(own) > 0 {
				top.el.Child = ar.tokenList(len(own))
				for _, c := range own {
					top.el.AddChild(c)
				}
				kids = kids[:top.kids]
			}
			doc.elems[top.n].next = len(doc.elems)
			if top.rawStart >= 0 && hasChildElement(top.el) {
				content := strings.TrimSpace(string(src[top.rawStart:before]))
				doc.raw[top.n] = strings.ReplaceAll(content, "\r\n", "\n")
			}
			ns = ns[:len(ns)-top.bindings]
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && !isSpace(t) {
				kids = append(kids, ar.text(string(t)))
			}
		case xml.Directive:
			if strings.HasPrefix(strings.TrimSpace(string(t)), "DOCTYPE") {
				return nil, fail(line, col, ErrDOCTYPE, "DOCTYPE declarations are not accepted in XPDL input")
			}
		}
	}
	if len(stack) > 0 {
		line, col := dec.InputPos()
		return nil, fail(line, col, ErrMalformed, "malformed XML: unexpected end of input inside <%s>", qualified(stack[len(stack)-1].rawName))
	}
	if doc.root == nil {
		return nil, fail(1, 1, ErrMalformed, "malformed XML: no root element")
	}
	return doc, nil
}

var xmlDeclEncoding = regexp.MustCompile(`^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']`)

// toUTF8 transcodes src to UTF-8 when its XML declaration names another
// character set.
func toUTF8(src []byte) ([]byte, error) {
	head := src[:min(len(src), 256)]
	m := xmlDeclEncoding.FindSubmatch(head)
	if m == nil {
		return src, nil
	}
	label := string(m[1])
	if strings.EqualFold(label, "utf-8") || strings.EqualFold(label, "utf8") {
		return src, nil
	}
	r, err := charset.NewReaderLabel(label, bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("unsupported encoding %q: %w", label, err)
	}
	return io.ReadAll(r)
}

func qualified(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

func isSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func hasChildElement(e *etree.Element) bool {
	for _, c := range e.Child {
		if _, ok := c.(*etree.Element); ok {
			return true
		}
	}
	return false
}

// readAll reads at most limit+1 bytes so that an oversized input is
// detected without reading all of it. When r knows its size (a file, a
// bytes or strings reader) the buffer is allocated once at that size
// rather than grown by doubling, which for a large package costs twice
// its size in garbage and copying.
func readAll(r io.Reader, limit int64) ([]byte, error) {
	// A bytes.Buffer hands its bytes over as they are: no copy. What is
	// read from them is copied into the model, so they are not kept.
	if b, ok := r.(*bytes.Buffer); ok {
		return b.Next(int(min(int64(b.Len()), limit+1))), nil
	}
	size := int64(-1)
	switch s := r.(type) {
	case interface{ Len() int }:
		size = int64(s.Len())
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := s.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size < 0 {
		return io.ReadAll(io.LimitReader(r, limit+1))
	}
	var b bytes.Buffer
	// The size is a hint: a file may grow while it is read. MinRead more
	// lets the read that finds EOF go without growing the buffer.
	b.Grow(int(min(size, limit+1)) + bytes.MinRead)
	_, err := b.ReadFrom(io.LimitReader(r, limit+1))
	return b.Bytes(), err
}
