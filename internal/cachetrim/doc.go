// Package cachetrim bounds what the manager's cache keeps of the objects
// that anyone who may write in a namespace can make it watch, by labelling
// them as the operator's or the chart's. It must not import the operator's
// controllers or reconcilers: they and the manager import it.
// It must not import controllers, cmd or test/: they build on it.
package cachetrim
