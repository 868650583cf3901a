package docs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// The Grafana dashboard and the metric reference it is checked against,
// relative to the repository root.
const (
	dashboardFile = "config/grafana/echo-operator.json"

	metricsDoc     = "docs/metrics.md"
	metricNameCol  = "Metric"
	metricTypeCol  = "Type"
	datasourceVar  = "datasource"
	datasourceType = "prometheus"
)

// prometheusSeries are the series Prometheus itself writes for every
// target; no exporter serves them, so docs/metrics.md does not list them.
var prometheusSeries = []string{"up"}

// histogramSuffixes are the series a classic histogram is exposed as.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// grafanaVariables are the variables Grafana defines itself.
var grafanaVariables = []string{"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"}

// TestDashboardUsesDocumentedMetrics fails when the Grafana dashboard is
// not a well-formed dashboard (invalid JSON, no uid, a panel id or variable
// name given twice, a panel or query off the ${datasource} variable), or
// when a query of a panel or variable reads a metric that no table of
// docs/metrics.md lists, or a variable that is not defined.
func TestDashboardUsesDocumentedMetrics(t *testing.T) {
	fsys := os.DirFS(reporoot.Must(t))

	doc, err := fs.ReadFile(fsys, metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	catalog, problems := metricCatalog(string(doc))
	if len(catalog) == 0 {
		t.Fatalf("%s: found no metric in a table with the columns %s | %s", metricsDoc, metricNameCol, metricTypeCol)
	}

	data, err := fs.ReadFile(fsys, dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	problems = append(problems, checkDashboard(data, catalog)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// --- The metric catalog of docs/metrics.md

// metricCatalog returns the type of every metric named in backticks in the
// Metric column of a table of doc that also has a Type column, whatever
// its section.
func metricCatalog(doc string) (map[string]string, []string) {
	catalog := map[string]string{}
	var problems []string
	for _, t := range allTables(doc) {
		if !hasColumns(t.header, []string{metricNameCol, metricTypeCol}) {
			continue
		}
		nc, tc := t.column(metricNameCol), t.column(metricTypeCol)
		for _, r := range t.rows {
			names := codeSpans(r.cell(nc))
			if len(names) == 0 {
				problems = append(problems, fmt.Sprintf("%s:%d: the %s cell %q names no metric in backticks",
					metricsDoc, r.line, metricNameCol, r.cell(nc)))
			}
			for _, n := range names {
				catalog[n] = strings.ToLower(strings.TrimSpace(r.cell(tc)))
			}
		}
	}
	return catalog, problems
}

// allTables returns every pipe table of doc outside fenced code blocks.
func allTables(doc string) []mdTable {
	var lines []mdLine
	inFence := false
	for i, text := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(text)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
			continue
		}
		if !inFence {
			lines = append(lines, mdLine{n: i + 1, text: text})
		}
	}
	return pipeTables(lines)
}

// documented reports whether a query may read the series name: a metric of
// the catalog, a series of a histogram of the catalog, or a series
// Prometheus writes itself.
func documented(catalog map[string]string, name string) bool {
	if _, ok := catalog[name]; ok {
		return !strings.Contains(catalog[name], "histogram")
	}
	if slices.Contains(prometheusSeries, name) {
		return true
	}
	for _, s := range histogramSuffixes {
		if base, ok := strings.CutSuffix(name, s); ok && strings.Contains(catalog[base], "histogram") {
			return true
		}
	}
	return false
}

// --- The dashboard

type dashboard struct {
	UID           string     `json:"uid"`
	Title         string     `json:"title"`
	SchemaVersion int        `json:"schemaVersion"`
	Panels        []panel    `json:"panels"`
	Templating    templating `json:"templating"`
}

type templating struct {
	List []variable `json:"list"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	GridPos    *gridPos       `json:"gridPos"`
	Targets    []panelTarget  `json:"targets"`
	Panels     []panel        `json:"panels"` // of a collapsed row
}

type gridPos struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

type panelTarget struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *datasourceRef `json:"datasource"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// onDatasourceVariable reports whether ref names the ${datasource}
// variable, of the Prometheus type.
func (ref *datasourceRef) onDatasourceVariable() bool {
	return ref != nil && ref.Type == datasourceType &&
		(ref.UID == "${"+datasourceVar+"}" || ref.UID == "$"+datasourceVar)
}

// checkDashboard returns the problems of the dashboard JSON data, whose
// queries may read the metrics of catalog only.
func checkDashboard(data []byte, catalog map[string]string) []string {
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return []string{fmt.Sprintf("%s: not valid dashboard JSON: %v", dashboardFile, err)}
	}
	c := &dashboardCheck{catalog: catalog, variables: slices.Clone(grafanaVariables), panelIDs: map[int]string{}}
	// The order matters: checkVariableNames collects the variables that
	// the queries checked after it may use.
	for _, check := range []func(*dashboardCheck, dashboard){
		(*dashboardCheck).checkHeader,
		(*dashboardCheck).checkVariableNames,
		(*dashboardCheck).checkVariableQueries,
		(*dashboardCheck).checkPanels,
	} {
		check(c, d)
	}
	return c.problems
}

// dashboardCheck collects the problems of one dashboard.
type dashboardCheck struct {
	catalog   map[string]string // the documented metrics, by name
	variables []string          // the variables a query may use
	panelIDs  map[int]string    // the title of every panel, by id
	problems  []string
}

func (c *dashboardCheck) report(format string, args ...any) {
	c.problems = append(c.problems, dashboardFile+": "+fmt.Sprintf(format, args...))
}

// checkQuery checks the PromQL expr of the panel or variable where.
func (c *dashboardCheck) checkQuery(where, expr string) {
	c.problems = append(c.problems, checkQuery(where, expr, c.catalog, c.variables)...)
}

// checkHeader checks that the dashboard has a uid, a title and a schema
// version.
func (c *dashboardCheck) checkHeader(d dashboard) {
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		c.report("the dashboard needs a uid, a title and a schemaVersion (uid %q, title %q, schemaVersion %d)", d.UID, d.Title, d.SchemaVersion)
	}
}

// checkVariableNames checks that every variable has a name of its own, and
// that the ${datasource} variable picks a Prometheus data source. It adds
// the names to c.variables.
func (c *dashboardCheck) checkVariableNames(d dashboard) {
	hasDatasource := false
	for _, v := range d.Templating.List {
		if v.Name == "" || slices.Contains(c.variables, v.Name) {
			c.report("the variable name %q is empty or given twice", v.Name)
		}
		c.variables = append(c.variables, v.Name)
		if v.Name == datasourceVar {
			hasDatasource = isPrometheusDatasource(v)
		}
	}
	if !hasDatasource {
		c.report("no variable %q of type datasource with the query %q", datasourceVar, datasourceType)
	}
}

// isPrometheusDatasource reports whether v is a variable of type
// datasource that lists the Prometheus data sources.
func isPrometheusDatasource(v variable) bool {
	var q string
	return v.Type == "datasource" && json.Unmarshal(v.Query, &q) == nil && q == datasourceType
}

// checkVariableQueries checks the data source and the query of every
// variable of type query.
func (c *dashboardCheck) checkVariableQueries(d dashboard) {
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		where := fmt.Sprintf("variable %q", v.Name)
		if !v.Datasource.onDatasourceVariable() {
			c.report("%s: the datasource is not the ${%s} variable of type %s", where, datasourceVar, datasourceType)
		}
		query, err := variableQuery(v.Query)
		if err != nil {
			c.report("%s: %v", where, err)
			continue
		}
		c.checkQuery(where, query)
	}
}

// checkPanels checks every panel, those of rows included, and that there
// is one at least.
func (c *dashboardCheck) checkPanels(d dashboard) {
	c.checkPanelList(d.Panels)
	if len(c.panelIDs) == 0 {
		c.report("no panel")
	}
}

func (c *dashboardCheck) checkPanelList(panels []panel) {
	for _, p := range panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		c.checkPanelID(where, p)
		if !p.GridPos.inGrid() {
			c.report("%s: the gridPos %+v is missing or outside the 24 columns", where, p.GridPos)
		}
		if p.Type == "row" {
			c.checkPanelList(p.Panels)
			continue
		}
		if !p.Datasource.onDatasourceVariable() {
			c.report("%s: the datasource is not the ${%s} variable of type %s", where, datasourceVar, datasourceType)
		}
		c.checkTargets(where, p.Targets)
	}
}

// checkPanelID checks that the panel p has an id, and one no other panel
// has.
func (c *dashboardCheck) checkPanelID(where string, p panel) {
	if p.ID <= 0 {
		c.report("%s: no id", where)
	} else if other, ok := c.panelIDs[p.ID]; ok {
		c.report("%s: the id is also the panel %q's", where, other)
	}
	c.panelIDs[p.ID] = p.Title
}

// inGrid reports whether pos is given and fits in the 24 columns of the
// dashboard.
func (pos *gridPos) inGrid() bool {
	return pos != nil && pos.W > 0 && pos.H > 0 && pos.X >= 0 && pos.X+pos.W <= 24
}

// checkTargets checks the queries of the panel where.
func (c *dashboardCheck) checkTargets(where string, targets []panelTarget) {
	if len(targets) == 0 {
		c.report("%s: no query", where)
	}
	refIDs := map[string]bool{}
	for _, tg := range targets {
		if tg.RefID == "" || refIDs[tg.RefID] {
			c.report("%s: the refId %q is empty or given twice", where, tg.RefID)
		}
		refIDs[tg.RefID] = true
		if tg.Datasource != nil && !tg.Datasource.onDatasourceVariable() {
			c.report("%s, query %s: the datasource is not the ${%s} variable", where, tg.RefID, datasourceVar)
		}
		if strings.TrimSpace(tg.Expr) == "" {
			c.report("%s, query %s: no expression", where, tg.RefID)
			continue
		}
		c.checkQuery(where+", query "+tg.RefID, tg.Expr)
	}
}

// variableQuery returns the PromQL of a query variable: the selector of
// label_values(selector, label), or the expression of query_result(expr).
func variableQuery(raw json.RawMessage) (string, error) {
	var q string
	if err := json.Unmarshal(raw, &q); err != nil {
		var obj struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Errorf("the query is neither a string nor an object with a query: %s", raw)
		}
		q = obj.Query
	}
	q = strings.TrimSpace(q)
	if m := labelValuesRe.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	if m := queryResultRe.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("the query %q is neither label_values(<selector>, <label>) nor query_result(<expr>)", q)
}

var (
	labelValuesRe = regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$`)
	queryResultRe = regexp.MustCompile(`^query_result\(\s*(.+)\s*\)$`)
	variableRefRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]`)
)

// checkQuery returns the problems of one query: metrics missing from the
// catalog, variables not defined.
func checkQuery(where, expr string, catalog map[string]string, variables []string) []string {
	var problems []string
	names, err := promqlMetrics(expr)
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s: %s: %v in\n\t%s", dashboardFile, where, err, expr))
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if documented(catalog, n) {
			continue
		}
		hint := ""
		if strings.Contains(catalog[n], "histogram") {
			hint = fmt.Sprintf(" as such: it is a histogram, read through its series %s", strings.Join(histogramSuffixes, ", "))
		}
		problems = append(problems, fmt.Sprintf("%s: %s reads %s, which no table of %s lists%s",
			dashboardFile, where, n, metricsDoc, hint))
	}
	for _, m := range variableRefRe.FindAllStringSubmatch(expr, -1) {
		name := m[1] + m[2] + m[3]
		if !slices.Contains(variables, name) {
			problems = append(problems, fmt.Sprintf("%s: %s uses the variable $%s, which the dashboard does not define", dashboardFile, where, name))
		}
	}
	return problems
}

// --- PromQL

// The keywords of PromQL: those followed by a list of labels, the
// aggregation operators (a modifier may come between them and their
// parenthesis) and the others. None is a metric name.
var (
	labelListKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
	otherKeywords     = []string{
		"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
		"bottomk", "topk", "quantile", "limitk", "limit_ratio",
		"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan",
	}
	metricNameRe = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:]*$`)
)

// promqlMetrics returns the metric names a PromQL expression selects, in
// order, with duplicates. Grafana's variables may stand anywhere a string,
// number or duration may. A selector must name its metrics: by name, or
// with __name__="name" or __name__=~"name|name|..." (names only, no other
// regular expression).
func promqlMetrics(expr string) ([]string, error) {
	lx := &promqlLexer{s: expr}
	for lx.i < len(lx.s) {
		if err := lx.next(); err != nil {
			return lx.names, err
		}
	}
	return lx.names, nil
}

// promqlLexer reads a PromQL expression one token at a time, keeping the
// metric names it selects.
type promqlLexer struct {
	s     string
	i     int      // the offset of the next token
	names []string // the metric names read so far
	// afterName is true when the previous token was a metric name: a
	// selector in braces that follows it narrows that metric down.
	afterName bool
}

// promqlOperators are the bytes of PromQL's operators and punctuation.
const promqlOperators = "()+-*/%^=!<>,@:"

// next reads the token at lx.i, chosen by its first byte.
func (lx *promqlLexer) next() error {
	c := lx.s[lx.i]
	switch {
	case isPromqlSpace(c):
		lx.i++
		return nil
	case c == '#':
		lx.skipComment()
		return nil
	case isQuote(c):
		return lx.readString()
	case c == '{':
		return lx.readSelector()
	case c == '[':
		return lx.readRange()
	case c == '$':
		return lx.readVariable()
	case lx.atNumber():
		lx.readNumber()
		return nil
	case isIdentByte(c, true):
		return lx.readWord()
	case strings.IndexByte(promqlOperators, c) >= 0:
		lx.moveTo(lx.i + 1)
		return nil
	}
	return fmt.Errorf("unexpected %q at offset %d", c, lx.i)
}

// moveTo moves past a token that is not a metric name, which ends at end.
func (lx *promqlLexer) moveTo(end int) {
	lx.i = end
	lx.afterName = false
}

// skipComment moves to the end of the line. A comment does not separate a
// metric name from its selector.
func (lx *promqlLexer) skipComment() {
	for lx.i < len(lx.s) && lx.s[lx.i] != '\n' {
		lx.i++
	}
}

// readString reads a string literal.
func (lx *promqlLexer) readString() error {
	_, end, err := promqlString(lx.s, lx.i)
	if err != nil {
		return err
	}
	lx.moveTo(end)
	return nil
}

// readSelector reads label matchers in braces, which either follow a metric
// name or name the metrics themselves.
func (lx *promqlLexer) readSelector() error {
	start := lx.i
	end, selected, err := promqlMatchers(lx.s, start)
	if err != nil {
		return err
	}
	switch {
	case !lx.afterName && len(selected) == 0:
		return fmt.Errorf("the selector %s names no metric", lx.s[start:end])
	case lx.afterName && len(selected) > 0:
		return fmt.Errorf("the selector %s names its metric twice", lx.s[start:end])
	}
	lx.names = append(lx.names, selected...)
	lx.moveTo(end)
	return nil
}

// readRange reads the range or subquery in brackets: [5m], [1h:5m].
func (lx *promqlLexer) readRange() error {
	end, err := closing(lx.s, lx.i, '[', ']')
	if err != nil {
		return err
	}
	lx.moveTo(end)
	return nil
}

// readVariable reads a reference to a Grafana variable: $name, ${name} or
// [[name]].
func (lx *promqlLexer) readVariable() error {
	m := variableRefRe.FindStringIndex(lx.s[lx.i:])
	if m == nil || m[0] != 0 {
		return fmt.Errorf("a stray $ at offset %d", lx.i)
	}
	lx.moveTo(lx.i + m[1])
	return nil
}

// atNumber reports whether a number starts at lx.i: a digit, or a dot and
// a digit.
func (lx *promqlLexer) atNumber() bool {
	c := lx.s[lx.i]
	return isDigit(c) || c == '.' && lx.i+1 < len(lx.s) && isDigit(lx.s[lx.i+1])
}

// readNumber reads a number or a duration: 3600, 0.5e-3, 0x1F, 1h30m.
func (lx *promqlLexer) readNumber() {
	start := lx.i
	hex := strings.HasPrefix(strings.ToLower(lx.s[start:]), "0x")
	end := start
	for end < len(lx.s) && (isIdentByte(lx.s[end], false) || lx.s[end] == '.' || !hex && isExponentSign(lx.s, start, end)) {
		end++
	}
	lx.moveTo(end)
}

// isExponentSign reports whether s[i] is the sign of the exponent of the
// number that starts at s[start].
func isExponentSign(s string, start, i int) bool {
	return (s[i] == '+' || s[i] == '-') && i > start && (s[i-1] == 'e' || s[i-1] == 'E')
}

// readWord reads a keyword, the name of a function or an aggregation, or
// a metric name.
func (lx *promqlLexer) readWord() error {
	end := lx.i
	for end < len(lx.s) && isIdentByte(lx.s[end], false) {
		end++
	}
	word := lx.s[lx.i:end]
	next := skipSpace(lx.s, end)
	lower := strings.ToLower(word)
	switch {
	case slices.Contains(labelListKeywords, lower):
		return lx.readLabelList(end, next)
	case slices.Contains(otherKeywords, lower), lx.opensParenthesis(next):
		// A keyword, or a function or an aggregation.
		lx.moveTo(end)
		return nil
	}
	if !metricNameRe.MatchString(word) {
		return fmt.Errorf("%q is not a metric name", word)
	}
	lx.names = append(lx.names, word)
	lx.i = end
	lx.afterName = true
	return nil
}

// readLabelList reads past a keyword that ends at end and the list of
// labels in parentheses that may follow it at next: by (namespace, echo).
func (lx *promqlLexer) readLabelList(end, next int) error {
	if lx.opensParenthesis(next) {
		var err error
		if end, err = closing(lx.s, next, '(', ')'); err != nil {
			return err
		}
	}
	lx.moveTo(end)
	return nil
}

// opensParenthesis reports whether s[i] is an opening parenthesis.
func (lx *promqlLexer) opensParenthesis(i int) bool {
	return i < len(lx.s) && lx.s[i] == '('
}

func isPromqlSpace(c byte) bool { return strings.IndexByte(" \t\r\n", c) >= 0 }

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isIdentByte reports whether c may be the first byte (if first) or a
// later byte of a metric name or a keyword.
func isIdentByte(c byte, first bool) bool {
	return c == '_' || c == ':' || isLetter(c) || !first && isDigit(c)
}

// isLabelByte reports whether c may be a byte of a label name.
func isLabelByte(c byte) bool { return c == '_' || isLetter(c) || isDigit(c) }

// promqlString returns the value of the string literal at s[i] and the
// offset past it.
func promqlString(s string, i int) (string, int, error) {
	quote := s[i]
	j := i + 1
	for j < len(s) && s[j] != quote {
		if s[j] == '\\' && quote != '`' {
			j++
		}
		j++
	}
	if j >= len(s) {
		return "", 0, fmt.Errorf("an unterminated string at offset %d", i)
	}
	lit := s[i : j+1]
	switch quote {
	case '`':
		return lit[1 : len(lit)-1], j + 1, nil
	case '\'':
		lit = `"` + strings.ReplaceAll(strings.ReplaceAll(lit[1:len(lit)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	v, err := strconv.Unquote(lit)
	if err != nil {
		return "", 0, fmt.Errorf("the string %s at offset %d: %w", s[i:j+1], i, err)
	}
	return v, j + 1, nil
}

// promqlMatchers reads the label matchers in braces at s[i]. It returns the
// offset past the closing brace and the metric names the __name__
// matchers select.
func promqlMatchers(s string, i int) (int, []string, error) {
	var names []string
	j := i + 1
	for {
		for j < len(s) && (isPromqlSpace(s[j]) || s[j] == ',') {
			j++
		}
		if j >= len(s) {
			return 0, nil, errors.New("an unterminated selector")
		}
		if s[j] == '}' {
			return j + 1, names, nil
		}
		m, err := readMatcher(s, j)
		if err != nil {
			return 0, nil, err
		}
		selected, err := m.metricNames()
		if err != nil {
			return 0, nil, err
		}
		names = append(names, selected...)
		j = m.end
	}
}

// labelMatcher is one matcher of a selector: label op "value".
type labelMatcher struct {
	label, op, value string
	end              int // the offset past the value
}

// matcherOps are the operators of a label matcher, the longer first.
var matcherOps = []string{"=~", "!~", "!=", "="}

// readMatcher reads the label matcher at s[j].
func readMatcher(s string, j int) (labelMatcher, error) {
	k := j
	for k < len(s) && isLabelByte(s[k]) {
		k++
	}
	m := labelMatcher{label: s[j:k]}
	if m.label == "" {
		return m, fmt.Errorf("no label name at offset %d of the selector", j)
	}
	k = skipSpace(s, k)
	for _, op := range matcherOps {
		if strings.HasPrefix(s[k:], op) {
			m.op = op
			break
		}
	}
	if m.op == "" {
		return m, fmt.Errorf("no matcher operator after the label %s", m.label)
	}
	k = skipSpace(s, k+len(m.op))
	if k >= len(s) || !isQuote(s[k]) {
		return m, fmt.Errorf("the value of the label %s is not a string", m.label)
	}
	var err error
	m.value, m.end, err = promqlString(s, k)
	return m, err
}

// metricNames returns the metric names a __name__ matcher selects, none for
// the matchers of other labels.
func (m labelMatcher) metricNames() ([]string, error) {
	if m.label != "__name__" {
		return nil, nil
	}
	switch m.op {
	case "=":
		return []string{m.value}, nil
	case "=~":
		names := strings.Split(m.value, "|")
		for _, n := range names {
			if !metricNameRe.MatchString(n) {
				return nil, fmt.Errorf("__name__=~%q is not a list of names separated by |", m.value)
			}
		}
		return names, nil
	}
	return nil, fmt.Errorf("__name__%s%q selects metrics by what they are not", m.op, m.value)
}

func skipSpace(s string, i int) int {
	for i < len(s) && isPromqlSpace(s[i]) {
		i++
	}
	return i
}

// closing returns the offset past the bracket that closes the one at s[i],
// skipping strings.
func closing(s string, i int, open, close byte) (int, error) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"', '\'', '`':
			_, end, err := promqlString(s, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("no %q closes the %q at offset %d", close, open, i)
}

// --- Tests of the checker itself

func TestPromqlMetrics(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		names []string
		err   string
	}{
		{expr: `up`, names: []string{"up"}},
		{expr: `sum by (namespace, echo) (rate(echo_http_requests_total{namespace=~"$namespace", handler!~"a|b"}[$__rate_interval]))`,
			names: []string{"echo_http_requests_total"}},
		{expr: `histogram_quantile(0.95, sum by (le) (rate(x_seconds_bucket{job=~"$job"}[1h])))`, names: []string{"x_seconds_bucket"}},
		{expr: "sum(a) by (reason) / ignoring (reason) group_left sum without (pod) (b) > bool 0.5e-3 and on (x) c offset 1h",
			names: []string{"a", "b", "c"}},
		{expr: `max_over_time(a[1h:5m]) unless b @ end() or vector(0)`, names: []string{"a", "b"}},
		{expr: `label_replace(a, "echo", "$1", "pod", "(.+)-[a-z0-9]+") # a comment naming fake_metric`, names: []string{"a"}},
		{expr: `time() - max(a:recorded:rate5m) * 3600`, names: []string{"a:recorded:rate5m"}},
		{expr: `{__name__=~"a|b_total", job="x"} + {__name__="c"}`, names: []string{"a", "b_total", "c"}},
		{expr: `count_values('version', a{x='it\'s'}) + topk($n, b)`, names: []string{"a", "b"}},
		{expr: `sum(rate({job="x"}[5m]))`, err: "names no metric"},
		{expr: `{__name__=~"echo_.*"}`, err: "not a list of names"},
		{expr: `{__name__!="a"}`, err: "by what they are not"},
		{expr: `a{__name__="b"}`, err: "names its metric twice"},
		{expr: `a{job="x}`, err: "unterminated"},
		{expr: `a ~ b`, err: "unexpected"},
	} {
		names, err := promqlMetrics(tc.expr)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("promqlMetrics(%q): error %v, want one containing %q", tc.expr, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("promqlMetrics(%q): %v", tc.expr, err)
		case tc.err == "" && !slices.Equal(names, tc.names):
			t.Errorf("promqlMetrics(%q) = %q, want %q", tc.expr, names, tc.names)
		}
	}
}

func TestMetricCatalogAndDashboardChecks(t *testing.T) {
	doc := "# M\n\n| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n" +
		"| `a_total` | counter | | |\n| `d_seconds` | histogram | | |\n\n## More\n\n" +
		"```\n| Metric | Type |\n|---|---|\n| `fenced` | gauge |\n```\n\n" +
		"| Metric | Type |\n|---|---|\n| `g1`, `g2` | gauge |\n| no name | gauge |\n\n" +
		"| Metric | Meaning |\n|---|---|\n| `untyped` | not a metric table |\n"
	catalog, problems := metricCatalog(doc)
	expectProblems(t, problems, []string{`the Metric cell "no name" names no metric`})
	for name, want := range map[string]bool{
		"a_total": true, "g1": true, "g2": true, "up": true,
		"d_seconds_bucket": true, "d_seconds_count": true, "d_seconds_sum": true, "d_seconds": false,
		"a_total_bucket": false, "fenced": false, "untyped": false, "other": false,
	} {
		if got := documented(catalog, name); got != want {
			t.Errorf("documented(%q) = %v, want %v", name, got, want)
		}
	}

	dash := func(panels, variables string) []byte {
		return []byte(`{"uid": "u", "title": "T", "schemaVersion": 39, "panels": [` + panels + `],
			"templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}` + variables + `]}}`)
	}
	const ds = `"datasource": {"type": "prometheus", "uid": "${datasource}"}`
	const pos = `"gridPos": {"x": 0, "y": 0, "w": 12, "h": 8}`
	p := func(id int, expr string) string {
		return fmt.Sprintf(`{"id": %d, "type": "timeseries", "title": "P%d", %s, %s, "targets": [{"refId": "A", "expr": %q}]}`, id, id, ds, pos, expr)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want []string
	}{
		{name: "good", data: dash(p(1, `rate(a_total{job=~"$job"}[$__rate_interval])`)+`, {"id": 2, "type": "row", "title": "R", `+pos+`, "panels": [`+p(3, `g1`)+`]}`,
			`, {"name": "job", "type": "query", `+ds+`, "query": {"query": "label_values({__name__=~\"g1|g2\"}, job)"}}`)},
		{name: "invalid JSON", data: []byte(`{"uid": `), want: []string{"not valid dashboard JSON"}},
		{name: "an undocumented metric", data: dash(p(1, `sum(g1) / sum(nope)`), ""), want: []string{"reads nope, which no table"}},
		{name: "a histogram read without a suffix", data: dash(p(1, `d_seconds`), ""), want: []string{"reads d_seconds, which no table"}},
		{name: "an id given twice", data: dash(p(1, `g1`)+","+p(1, `g2`), ""), want: []string{`the id is also the panel "P1"'s`}},
		{name: "an undefined variable", data: dash(p(1, `g1{namespace=~"$namespace"}`), ""), want: []string{"uses the variable $namespace"}},
		{name: "a fixed datasource", data: dash(strings.Replace(p(1, `g1`), "${datasource}", "prom-uid", 1), ""), want: []string{"the datasource is not the ${datasource} variable"}},
		{name: "no datasource variable", data: []byte(`{"uid": "u", "title": "T", "schemaVersion": 39, "panels": [` + p(1, `g1`) + `]}`),
			want: []string{`no variable "datasource"`}},
		{name: "a variable off the catalog", data: dash(p(1, `g1`), `, {"name": "ns", "type": "query", `+ds+`, "query": "label_values(kube_pod_info, namespace)"}`),
			want: []string{`variable "ns" reads kube_pod_info`}},
		{name: "a panel past the grid", data: dash(strings.Replace(p(1, `g1`), `"w": 12`, `"w": 25`, 1), ""), want: []string{"outside the 24 columns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectProblems(t, checkDashboard(tc.data, catalog), tc.want)
		})
	}
}
