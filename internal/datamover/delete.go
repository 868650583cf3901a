package datamover

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// DeleteOptions configure Delete.
type DeleteOptions struct {
	// Store holds the backup under Key.
	Store backupstore.Store
	Key   string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// Delete removes the backup under o.Key: its manifest first, so that a
// backup deleted halfway is never taken for a complete one, then its
// archive under either compression. An object already gone is not an
// error, so an interrupted Delete is completed by running it again. In a
// filesystem store, temporary files left under the key by interrupted
// writes go too, and then the key's directory once it is empty.
func Delete(ctx context.Context, o DeleteOptions) error {
	if o.Store == nil {
		return fmt.Errorf("%w: no store", backupstore.ErrInvalidArgument)
	}
	if err := backupstore.CheckKey(o.Key); err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("delete started", "location", o.Store.Location(o.Key))
	for _, key := range backupObjectKeys(o.Key) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := o.Store.Delete(ctx, key); err != nil {
			return err
		}
		log.Info("object deleted", "location", o.Store.Location(key))
	}
	if fsStore, ok := o.Store.(*backupstore.FSStore); ok {
		// The objects are gone: what is left is only clutter, so failing
		// to remove it does not fail the deletion.
		if err := fsStore.RemoveKeyDir(o.Key, backupObjectNames()); err != nil {
			log.Warn("could not remove the backup's directory", "location", o.Store.Location(o.Key), "error", err.Error())
		}
	}
	log.Info("delete complete", "location", o.Store.Location(o.Key))
	return nil
}

// backupObjectNames are the names of a backup's objects under its key, the
// manifest first.
func backupObjectNames() []string {
	return []string{backupstore.ManifestName, backupstore.CompressionGzip.ArchiveName(), backupstore.CompressionNone.ArchiveName()}
}

// backupObjectKeys are the keys of a backup's objects, the manifest first.
func backupObjectKeys(key string) []string {
	names := backupObjectNames()
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = key + "/" + name
	}
	return keys
}
