package fakes3

import (
	"bytes"
	"crypto/md5"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bucket is how a bucket answers: build one with Objects, HugePage,
// BloatedPage, EndlessPages, HugeManifests or Slow.
type Bucket interface {
	// list answers a ListObjectsV2 request for a page of the keys under
	// prefix, after the continuation token.
	list(q request, prefix, token string)
	// object answers a GET or HEAD of key.
	object(q request, key string)
}

// ModTime is the time of every object the server lists.
var ModTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// pageKeys is how many keys a page holds, as S3 sends them.
const pageKeys = 1000

// Backup keys the generated buckets list, under the request's prefix:
// BackupKey(i) is the key of backup i, in the operator's layout
// (<namespace>/<echo>/<backup>), and each has an archive of ArchiveSize
// bytes and a manifest.
const (
	BackupNamespace = "team"
	BackupEcho      = "web"
	ArchiveSize     = 7
)

// BackupKey is the key of the i-th backup of a generated bucket.
func BackupKey(i int) string {
	return fmt.Sprintf("%s/%s/b-%07d", BackupNamespace, BackupEcho, i)
}

// generatedObject is the i-th object of a generated bucket: the archive,
// then the manifest, of each backup, in key order.
func generatedObject(i int) (key string, size int64) {
	if i%2 == 0 {
		return BackupKey(i/2) + "/data.tar.gz", ArchiveSize
	}
	return BackupKey(i/2) + "/manifest.json", int64(len(smallManifest))
}

// smallManifest is a manifest of one data file whose summary comes first,
// as the operator writes them, for an archive of ArchiveSize bytes.
var smallManifest = []byte(`{"formatVersion":1,"createdAt":"2026-01-02T03:04:05Z",` +
	`"source":{"namespace":"` + BackupNamespace + `","name":"` + BackupEcho + `","uid":"fake","generation":1},` +
	`"compression":"gzip","archive":{"name":"data.tar.gz","size":` + strconv.Itoa(ArchiveSize) + `,"sha256":"` + strings.Repeat("ab", 32) + `"},` +
	`"dataFiles":1,"config":{},"files":[` +
	`{"path":"config.json","size":2,"mode":"0644","sha256":"` + strings.Repeat("cd", 32) + `"},` +
	`{"path":"data/journal","size":5,"mode":"0640","sha256":"` + strings.Repeat("ef", 32) + `"}],"directories":[]}`)

// --- Objects

// Objects serves objects as stored: listed by key, a thousand a page, and
// read whole.
func Objects(objects map[string][]byte) Bucket { return storedObjects(objects) }

type storedObjects map[string][]byte

func (o storedObjects) list(q request, prefix, token string) {
	var keys []string
	for k := range o {
		if strings.HasPrefix(k, prefix) && k > token {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	truncated := len(keys) > pageKeys
	keys = keys[:min(len(keys), pageKeys)]
	next := ""
	if truncated {
		next = keys[len(keys)-1]
	}
	writeListHeader(q, prefix, next)
	for _, k := range keys {
		_ = q.write(contents(k, int64(len(o[k])), contentETag(o[k])))
	}
	_ = q.write([]byte(listFooter))
}

func (o storedObjects) object(q request, key string) {
	b, ok := o[key]
	if !ok {
		writeError(q.w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	writeObjectHeader(q, int64(len(b)), contentETag(b))
	if q.r.Method == http.MethodGet {
		_ = q.write(b)
	}
}

// --- HugePage

// HugePage answers the listing with one page of size bytes, of backups'
// keys, that says it is complete. Manifests read are small ones.
func HugePage(size int64) Bucket { return hugePage(size) }

type hugePage int64

func (h hugePage) list(q request, prefix, _ string) {
	writeListHeader(q, prefix, "")
	sent := int64(0)
	for i := 0; sent < int64(h); i++ {
		key, size := generatedObject(i)
		c := contents(prefix+key, size, "")
		if q.write(c) != nil {
			return
		}
		sent += int64(len(c))
	}
	_ = q.write([]byte(listFooter))
}

func (hugePage) object(q request, key string) { serveGenerated(q, key) }

// --- BloatedPage

// BloatedPage answers the listing with a page of one backup's manifest
// that S3 says size bytes of things about: the object's grants, each a
// small element a client decodes into a struct of its own.
func BloatedPage(size int64) Bucket { return bloatedPage(size) }

type bloatedPage int64

var grant = []byte(`<Grant><Permission>READ</Permission></Grant>`)

func (b bloatedPage) list(q request, prefix, _ string) {
	writeListHeader(q, prefix, "")
	key, size := generatedObject(1)
	entry := contents(prefix+key, size, "")
	end := bytes.Index(entry, []byte("</Contents>"))
	if q.write(entry[:end]) != nil {
		return
	}
	chunk := bytes.Repeat(grant, 1024)
	for sent := int64(0); sent < int64(b); sent += int64(len(chunk)) {
		if q.write(chunk) != nil {
			return
		}
	}
	_ = q.write([]byte("</Contents>" + listFooter))
}

func (bloatedPage) object(q request, key string) { serveGenerated(q, key) }

// --- EndlessPages

// EndlessPages answers every listing request with a page of keysPerPage
// keys of backups (none when 0) that says more follow, forever. Manifests
// read are small ones.
func EndlessPages(keysPerPage int) Bucket { return endlessPages(keysPerPage) }

type endlessPages int

func (e endlessPages) list(q request, prefix, token string) {
	page, _ := strconv.Atoi(token)
	writeListHeader(q, prefix, strconv.Itoa(page+1))
	for i := range int(e) {
		key, size := generatedObject(page*int(e) + i)
		_ = q.write(contents(prefix+key, size, ""))
	}
	_ = q.write([]byte(listFooter))
}

func (endlessPages) object(q request, key string) { serveGenerated(q, key) }

// serveGenerated answers a read of a generated backup's object.
func serveGenerated(q request, key string) {
	if strings.HasSuffix(key, "/manifest.json") {
		writeObjectHeader(q, int64(len(smallManifest)), "")
		if q.r.Method == http.MethodGet {
			_ = q.write(smallManifest)
		}
		return
	}
	writeObjectHeader(q, ArchiveSize, "")
	if q.r.Method == http.MethodGet {
		_ = q.write(make([]byte, ArchiveSize))
	}
}

// --- HugeManifests

// HugeManifests lists backups backups (at most 500, one page) whose
// manifests are size bytes each, of the layout that lists the files
// before the summary: a manifest of millions of files.
func HugeManifests(backups int, size int64) Bucket {
	return hugeManifests{backups: min(backups, pageKeys/2), size: size}
}

type hugeManifests struct {
	backups int
	size    int64
}

func (h hugeManifests) list(q request, prefix, _ string) {
	writeListHeader(q, prefix, "")
	for i := range 2 * h.backups {
		key, size := generatedObject(i)
		if strings.HasSuffix(key, "/manifest.json") {
			size = h.size
		}
		_ = q.write(contents(prefix+key, size, ""))
	}
	_ = q.write([]byte(listFooter))
}

// The parts of a huge manifest: the head, a file entry repeated, the
// tail. Entries have one length, so the size is known before it is sent.
var (
	hugeHead = []byte(`{"formatVersion":1,"createdAt":"2026-01-02T03:04:05Z",` +
		`"source":{"namespace":"` + BackupNamespace + `","name":"` + BackupEcho + `","uid":"fake","generation":1},"config":{},"files":[` +
		`{"path":"config.json","size":2,"mode":"0644","sha256":"` + strings.Repeat("cd", 32) + `"}`)
	hugeEntry = []byte(`,{"path":"data/f-000000000","size":1,"mode":"0640","sha256":"` + strings.Repeat("ef", 32) + `"}`)
	hugeTail  = []byte(`],"directories":[],"compression":"gzip","archive":{"name":"data.tar.gz","size":` +
		strconv.Itoa(ArchiveSize) + `,"sha256":"` + strings.Repeat("ab", 32) + `"}}`)
)

func (h hugeManifests) object(q request, key string) {
	if !strings.HasSuffix(key, "/manifest.json") {
		serveGenerated(q, key)
		return
	}
	entries := max(0, (h.size-int64(len(hugeHead))-int64(len(hugeTail)))/int64(len(hugeEntry)))
	writeObjectHeader(q, int64(len(hugeHead))+entries*int64(len(hugeEntry))+int64(len(hugeTail)), "")
	if q.r.Method != http.MethodGet || q.write(hugeHead) != nil {
		return
	}
	// Entries go out 64 KiB at a time.
	const batch = 1024
	chunk := bytes.Repeat(hugeEntry, batch)
	for sent := int64(0); sent < entries; sent += batch {
		n := min(batch, entries-sent)
		if q.write(chunk[:n*int64(len(hugeEntry))]) != nil {
			return
		}
	}
	_ = q.write(hugeTail)
}

// --- Slow

// Slow answers nothing, neither headers nor body, until its client
// gives up (or the server stops).
func Slow() Bucket { return slow{} }

type slow struct{}

func (slow) list(q request, _, _ string) { q.wait() }
func (slow) object(q request, _ string)  { q.wait() }

// wait returns once the client has gone or the server stops.
func (q request) wait() {
	select {
	case <-q.r.Context().Done():
	case <-q.closing:
	}
}

// --- The S3 protocol's answers

const listFooter = "</ListBucketResult>"

func writeListHeader(q request, prefix, next string) {
	q.w.Header().Set("Content-Type", "application/xml")
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	b.WriteString("<Prefix>" + escape(prefix) + "</Prefix><MaxKeys>1000</MaxKeys>")
	if next != "" {
		b.WriteString("<IsTruncated>true</IsTruncated><NextContinuationToken>" + escape(next) + "</NextContinuationToken>")
	} else {
		b.WriteString("<IsTruncated>false</IsTruncated>")
	}
	_ = q.write([]byte(b.String()))
}

// contents is the listing entry of an object; generated objects of one
// size have one content, and one ETag.
func contents(key string, size int64, etag string) []byte {
	if etag == "" {
		etag = sizeETag(size)
	}
	return fmt.Appendf(nil, `<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>`,
		escape(key), ModTime.Format("2006-01-02T15:04:05.000Z"), etag, size)
}

func sizeETag(size int64) string { return fmt.Sprintf("%032x", size) }

// contentETag is S3's ETag of an object stored in one request: the MD5
// of its content.
func contentETag(b []byte) string { return fmt.Sprintf("%x", md5.Sum(b)) }

func writeObjectHeader(q request, size int64, etag string) {
	if etag == "" {
		etag = sizeETag(size)
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Last-Modified", ModTime.Format(http.TimeFormat))
	h.Set("ETag", `"`+etag+`"`)
	q.w.WriteHeader(http.StatusOK)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>%s</Code><Message>%s</Message></Error>`, code, escape(message))
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
