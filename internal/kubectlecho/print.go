package kubectlecho

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printTable prints rows under header in columns, as kubectl does: three
// spaces between columns; a nil header prints none.
func printTable(out io.Writer, header []string, rows [][]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	if header != nil {
		rows = append([][]string{header}, rows...)
	}
	for _, row := range rows {
		if _, err := fmt.Fprintln(w, strings.Join(row, "\t")); err != nil {
			return err
		}
	}
	return w.Flush()
}

// printFields prints "Name:  value" lines with the values aligned.
func printFields(out io.Writer, fields [][2]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, f := range fields {
		if _, err := fmt.Fprintf(w, "%s:\t%s\n", f[0], f[1]); err != nil {
			return err
		}
	}
	return w.Flush()
}
