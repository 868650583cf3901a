// Package events records the operator's Events through the events.k8s.io/v1
// API, with client-go's broadcaster: an Event repeated for the same object
// (at the same resourceVersion) with the same type, reason and action
// within six minutes is not written again but counted in the series of
// the first. Recorder adapts it to record.EventRecorder, the interface the
// Helm library and the controllers record with.
// It imports no package of the operator but the API types.
package events
