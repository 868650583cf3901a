package kubectlecho

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printTable prints rows under header in columns, as kubectl does: three
// spaces between columns; a nil header prints none. Each cell is printed
// terminalSafe.
func printTable(out io.Writer, header []string, rows [][]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	if header != nil {
		rows = append([][]string{header}, rows...)
	}
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, cell := range row {
			cells[i] = terminalSafe(cell)
		}
		if _, err := fmt.Fprintln(w, strings.Join(cells, "\t")); err != nil {
			return err
		}
	}
	return w.Flush()
}

// printFields prints "Name:  value" lines with the values aligned, each
// value terminalSafe.
func printFields(out io.Writer, fields [][2]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, f := range fields {
		if _, err := fmt.Fprintf(w, "%s:\t%s\n", f[0], terminalSafe(f[1])); err != nil {
			return err
		}
	}
	return w.Flush()
}
