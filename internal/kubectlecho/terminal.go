package kubectlecho

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// What the plugin prints comes in part from whoever may write in the
// namespace: names, condition and Event messages (which quote storage
// errors and Helm's descriptions), release descriptions. A control
// character in them would reach the terminal as a command: an escape
// sequence can rewrite what is on screen, hide a line, set the window
// title or, on some terminals, answer back. Every value printed goes
// through terminalSafe first (printf, printTable, printFields).

// terminalSafe is s as plain text: a line break or tab becomes a space (a
// table row stays one line), any other control character, a character
// that reorders text (bidirectional overrides), and a byte that is not
// UTF-8 is shown escaped, as Go quotes it (\x1b, \u202e).
func terminalSafe(s string) string {
	if !needsEscaping(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// needsEscaping says whether terminalSafe changes s.
func needsEscaping(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune says whether r must not reach a terminal as it is: the C0 and
// C1 controls and DEL, and the characters that reorder text (bidirectional
// marks, embeddings, overrides and isolates).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f:
		return true
	case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		return true
	}
	return false
}

// terminalSafeArgs makes the text arguments of a printf terminalSafe;
// numbers and times pass as they are.
func terminalSafeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = terminalSafe(v)
		case error:
			out[i] = terminalSafe(v.Error())
		case fmt.Stringer:
			out[i] = terminalSafe(v.String())
		default:
			out[i] = a
		}
	}
	return out
}
