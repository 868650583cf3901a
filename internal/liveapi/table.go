package liveapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableColumns describe a kind's table: kubectl get shows the columns of
// priority 0, -o wide all of them.
type tableColumns[T any] struct {
	columns []metav1.TableColumnDefinition
	cells   func(*T, time.Time) []any
}

// convert builds the table of one object or of a list's items.
func (t tableColumns[T]) convert(object runtime.Object, items func(runtime.Object) ([]T, bool)) (*metav1.Table, error) {
	rows, ok := items(object)
	if !ok {
		return nil, fmt.Errorf("cannot show %T as a table", object)
	}
	table := &metav1.Table{ColumnDefinitions: t.columns}
	if l, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion, table.Continue = l.GetResourceVersion(), l.GetContinue()
	}
	now := time.Now()
	for i := range rows {
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  t.cells(&rows[i], now),
			Object: runtime.RawExtension{Object: any(&rows[i]).(runtime.Object)},
		})
	}
	return table, nil
}

// age is kubectl's form of the time since t; <unknown> for none.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func column(name, typ, description string, priority int32) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: typ, Description: description, Priority: priority}
	if name == "Name" {
		c.Format = "name"
	}
	return c
}

// tableConvertor adapts a kind's columns to rest.TableConvertor.
type tableConvertor[T any] struct {
	tableColumns[T]
	items func(runtime.Object) ([]T, bool)
}

func (c tableConvertor[T]) ConvertToTable(_ context.Context, object, _ runtime.Object) (*metav1.Table, error) {
	return c.convert(object, c.items)
}
