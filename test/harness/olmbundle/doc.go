// Package olmbundle makes what the OLM tests install besides the committed
// bundle: a made-up earlier release of it, to upgrade from.
// Tests only: nothing in the product imports it.
package olmbundle
