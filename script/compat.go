package script

// javaCompat is the prelude that lets the Java-flavoured expressions of
// real XPDL files run as JavaScript. It covers what the corpus uses:
// equals/equalsIgnoreCase/compareTo on strings, numbers and booleans, the
// boxing helpers (Boolean.valueOf, Long.valueOf, Integer.parseInt, ...),
// and java.lang.Math / java.lang.String / java.util.Date aliases. Methods
// are defined non-enumerable so that they never show up in for-in loops.
const javaCompat = `
(function (g) {
  "use strict"; // this is the primitive, not a wrapper: unbox needs no valueOf
  function def(proto, name, fn) {
    Object.defineProperty(proto, name, {value: fn, writable: true, configurable: true, enumerable: false});
  }
  function cmp(a, b) { return a < b ? -1 : (a > b ? 1 : 0); }
  function unbox(x) {
    var t = typeof x;
    if (t === "string" || t === "number" || t === "boolean") return x;
    return (x !== null && x !== undefined && typeof x.valueOf === "function") ? x.valueOf() : x;
  }

  [String.prototype, Number.prototype, Boolean.prototype].forEach(function (p) {
    def(p, "equals", function (o) { return unbox(this) === unbox(o); });
    def(p, "compareTo", function (o) { return cmp(unbox(this), unbox(o)); });
    def(p, "hashCode", function () { return String(unbox(this)).length; });
  });
  def(String.prototype, "equalsIgnoreCase", function (o) {
    return o !== null && o !== undefined && String(this).toLowerCase() === String(o).toLowerCase();
  });
  def(String.prototype, "isEmpty", function () { return String(this).length === 0; });
  def(String.prototype, "contains", function (s) { return String(this).indexOf(String(s)) >= 0; });
  def(Number.prototype, "intValue", function () { return Math.trunc(unbox(this)); });
  def(Number.prototype, "longValue", function () { return Math.trunc(unbox(this)); });
  def(Number.prototype, "doubleValue", function () { return unbox(this); });
  def(Boolean.prototype, "booleanValue", function () { return unbox(this); });

  function boxNumber(parse) {
    return { valueOf: function (s) { return parse(s); }, parseInt: parse, parseLong: parse, parseDouble: parse,
             MAX_VALUE: Number.MAX_SAFE_INTEGER, MIN_VALUE: Number.MIN_SAFE_INTEGER };
  }
  function toInt(s) { var n = parseInt(String(s), 10); if (isNaN(n)) throw new TypeError("not a number: " + s); return n; }
  function toFloat(s) { var n = parseFloat(String(s)); if (isNaN(n)) throw new TypeError("not a number: " + s); return n; }
  var JInteger = boxNumber(toInt), JLong = boxNumber(toInt), JDouble = boxNumber(toFloat);
  var JBoolean = {
    valueOf: function (s) { return typeof s === "boolean" ? s : String(s).toLowerCase() === "true"; },
    parseBoolean: function (s) { return String(s).toLowerCase() === "true"; },
    TRUE: true, FALSE: false
  };
  var JString = { valueOf: function (x) { return String(x); } };
  function JDate(ms) { return ms === undefined ? new Date() : new Date(ms); }

  g.Integer = JInteger; g.Long = JLong; g.Double = JDouble; g.Float = JDouble;
  g.Boolean.valueOf = JBoolean.valueOf; g.Boolean.parseBoolean = JBoolean.parseBoolean;
  g.Boolean.TRUE = true; g.Boolean.FALSE = false;
  g.java = {
    lang: { Math: Math, String: JString, Integer: JInteger, Long: JLong, Double: JDouble, Boolean: JBoolean },
    util: { Date: JDate },
    io: { File: { pathSeparator: ":", separator: "/" } }
  };
})(this);
`
