package xpdl

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
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

// document is an XML document parsed into an etree tree, with the source
// position of every element and the raw inner XML of elements whose child
// content the model keeps verbatim (ExtendedAttribute).
type document struct {
	root *etree.Element
	pos  map[*etree.Element]Pos
	raw  map[*etree.Element]string
}

// rawInnerTags are the local names whose inner XML is kept verbatim.
var rawInnerTags = map[string]bool{"ExtendedAttribute": true}

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
	// A rough element count sizes the position table once.
	doc := &document{pos: make(map[*etree.Element]Pos, bytes.Count(src, []byte("<"))/2), raw: make(map[*etree.Element]string)}
	// RawToken leaves namespaces and tag matching to us: cheaper than
	// Token, which resolves every name through maps and copies it.
	type frame struct {
		el       *etree.Element
		rawName  xml.Name // as written, for matching the end tag
		rawStart int64    // inner start offset of a raw-content element, -1 otherwise
		bindings int      // namespace bindings this element declared
	}
	type binding struct{ prefix, uri string }
	var (
		stack    []frame
		ns       []binding
		elements int
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
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
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
			elements++
			if elements > opts.MaxElements {
				return nil, fail(line, col, ErrTooManyElements, "more than %d elements", opts.MaxElements)
			}
			if len(stack) >= opts.MaxDepth {
				return nil, fail(line, col, ErrTooDeep, "element <%s> nested deeper than the limit of %d", t.Name.Local, opts.MaxDepth)
			}
			if len(t.Attr) > opts.MaxAttrs {
				return nil, fail(line, col, ErrTooManyAttrs, "element <%s> has %d attributes, more than the limit of %d", t.Name.Local, len(t.Attr), opts.MaxAttrs)
			}
			f := frame{rawName: t.Name, rawStart: -1}
			for _, a := range t.Attr {
				switch {
				case a.Name.Space == "xmlns":
					ns = append(ns, binding{a.Name.Local, a.Value})
					f.bindings++
				case a.Name.Space == "" && a.Name.Local == "xmlns":
					ns = append(ns, binding{"", a.Value})
					f.bindings++
				}
			}
			el := etree.NewElement(t.Name.Local)
			el.Space = resolve(t.Name.Space)
			if t.Name.Space != "" && el.Space == "" {
				return nil, fail(line, col, ErrMalformed, "malformed XML: undeclared namespace prefix %q", t.Name.Space)
			}
			for _, a := range t.Attr {
				// Only unqualified attributes belong to XPDL; vendor
				// (xpdExt:, g360:) and xmlns attributes are dropped.
				if a.Name.Space == "" && a.Name.Local != "xmlns" {
					el.CreateAttr(a.Name.Local, a.Value)
				}
			}
			if len(stack) == 0 {
				if doc.root != nil {
					return nil, fail(line, col, ErrMalformed, "malformed XML: more than one root element")
				}
				doc.root = el
			} else {
				stack[len(stack)-1].el.AddChild(el)
			}
			doc.pos[el] = Pos{line, col}
			f.el = el
			if rawInnerTags[t.Name.Local] {
				f.rawStart = dec.InputOffset()
			}
			stack = append(stack, f)
		case xml.EndElement:
			if len(stack) == 0 {
				return nil, fail(line, col, ErrMalformed, "malformed XML: unexpected end element </%s>", qualified(t.Name))
			}
			top := stack[len(stack)-1]
			if t.Name != top.rawName {
				return nil, fail(line, col, ErrMalformed, "malformed XML: element <%s> closed by </%s>", qualified(top.rawName), qualified(t.Name))
			}
			if top.rawStart >= 0 && hasChildElement(top.el) {
				content := strings.TrimSpace(string(src[top.rawStart:before]))
				doc.raw[top.el] = strings.ReplaceAll(content, "\r\n", "\n")
			}
			ns = ns[:len(ns)-top.bindings]
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && !isSpace(t) {
				stack[len(stack)-1].el.CreateText(string(t))
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
// detected without reading all of it.
func readAll(r io.Reader, limit int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, limit+1))
}
