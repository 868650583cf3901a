package backupstore

import (
	"encoding/xml"
	"strings"
	"testing"
)

// TestReadListPage: a page keeps what a listing reads of it, whatever
// else it says, and at most maxPageKeys objects.
func TestReadListPage(t *testing.T) {
	entry := func(key string) string {
		return `<Contents><Key>` + key + `</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>&quot;abc&quot;</ETag><Size>7</Size>` +
			`<Owner><ID>x</ID></Owner>` + strings.Repeat(`<Grant><Permission>READ</Permission></Grant>`, 1000) + `<StorageClass>STANDARD</StorageClass></Contents>`
	}
	page := `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
		`<Name>b</Name><Prefix>p/</Prefix><IsTruncated>true</IsTruncated><NextContinuationToken>t2</NextContinuationToken>` +
		`<EncodingType>url</EncodingType><CommonPrefixes><Prefix>q/</Prefix></CommonPrefixes>` + entry("p/a%2Fb") + entry("p/c") + `</ListBucketResult>`
	got, err := readListPage(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var read listPage
	if err := xml.Unmarshal(got, &read); err != nil {
		t.Fatal(err)
	}
	if read.IsTruncated != "true" || read.NextContinuationToken != "t2" || read.EncodingType != "url" || read.Prefix != "p/" || len(read.Contents) != 2 ||
		read.Contents[0] != (listEntry{Key: "p/a%2Fb", LastModified: "2026-01-02T03:04:05.000Z", ETag: `"abc"`, Size: "7"}) {
		t.Errorf("read %+v", read)
	}
	if len(got) > 600 {
		t.Errorf("a page of two objects is %d bytes again:\n%s", len(got), got)
	}

	many := `<ListBucketResult>` + strings.Repeat(`<Contents><Key>k</Key></Contents>`, maxPageKeys+1) + `</ListBucketResult>`
	if _, err := readListPage(strings.NewReader(many)); err == nil || !strings.Contains(err.Error(), "more than 1000 objects") {
		t.Errorf("a page of %d objects: %v", maxPageKeys+1, err)
	}
	for _, bad := range []string{"", "not XML", `<ListBucketResult><Contents><Key>k</Key>`} {
		if _, err := readListPage(strings.NewReader(bad)); err == nil {
			t.Errorf("page %q read", bad)
		}
	}
}
