package clusteruser

// DocCommand is a kubectl command as README.md or docs/ shows it, without
// the word kubectl.
type DocCommand []string

// With replaces, at run time, the words old (the documentation's names) by
// new: With(old, new, ...). The command itself is left as it is.
func (c DocCommand) With(r ...string) DocCommand {
	out := make(DocCommand, len(c))
	for i, w := range c {
		out[i] = w
		for j := 0; j+1 < len(r); j += 2 {
			if w == r[j] {
				out[i] = r[j+1]
			}
		}
	}
	return out
}
