package s3blob

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fakeS3 is a small S3-compatible server for one bucket: path-style PutObject, GetObject,
// DeleteObject and ListObjectsV2, each request authenticated by verifying its SigV4 signature
// with an implementation written from the AWS specification, not the SDK's signer — so the
// adapter is tested on the wire protocol, not against itself.
type fakeS3 struct {
	bucket, region, accessKey, secretKey string
	pageSize                             int // ListObjectsV2 keys per page, small to exercise paging

	mu      sync.Mutex
	objects map[string][]byte
	signed  int // requests whose signature verified
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s3Error(w, http.StatusBadRequest, "IncompleteBody", err.Error())
		return
	}
	if code, msg := f.verify(r, body); code != "" {
		s3Error(w, http.StatusForbidden, code, msg)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != f.bucket {
		s3Error(w, http.StatusNotFound, "NoSuchBucket", bucket)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signed++
	switch {
	case r.Method == http.MethodPut && key != "":
		f.objects[key] = body
		w.Header().Set("ETag", `"`+hex.EncodeToString(sha256Sum(body)[:16])+`"`)
	case r.Method == http.MethodGet && key != "":
		data, ok := f.objects[key]
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey", key)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	case r.Method == http.MethodDelete && key != "":
		delete(f.objects, key)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
		f.list(w, r.URL.Query())
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented", r.Method+" "+r.URL.String())
	}
}

type listResult struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string   `xml:"Name"`
	Prefix                string   `xml:"Prefix"`
	KeyCount              int      `xml:"KeyCount"`
	MaxKeys               int      `xml:"MaxKeys"`
	IsTruncated           bool     `xml:"IsTruncated"`
	NextContinuationToken string   `xml:"NextContinuationToken,omitempty"`
	Contents              []struct {
		Key  string `xml:"Key"`
		Size int    `xml:"Size"`
	} `xml:"Contents"`
}

func (f *fakeS3) list(w http.ResponseWriter, q url.Values) {
	prefix, after := q.Get("prefix"), q.Get("continuation-token")
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	res := listResult{Name: f.bucket, Prefix: prefix, MaxKeys: f.pageSize}
	if len(keys) > f.pageSize {
		keys, res.IsTruncated = keys[:f.pageSize], true
		res.NextContinuationToken = keys[len(keys)-1]
	}
	for _, k := range keys {
		res.Contents = append(res.Contents, struct {
			Key  string `xml:"Key"`
			Size int    `xml:"Size"`
		}{k, len(f.objects[k])})
	}
	res.KeyCount = len(keys)
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(res)
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, xmlEscape(msg))
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// verify checks the request's SigV4 Authorization header and payload hash; it returns an S3
// error code and message, or "" when the request is authentic.
func (f *fakeS3) verify(r *http.Request, body []byte) (string, string) {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "AccessDenied", "not a SigV4 request"
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[0] != f.accessKey || cred[2] != f.region || cred[3] != "s3" || cred[4] != "aws4_request" {
		return "InvalidAccessKeyId", fields["Credential"]
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, cred[1]) || time.Since(at).Abs() > 15*time.Minute {
		return "RequestTimeTooSkewed", amzDate
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload != "UNSIGNED-PAYLOAD" && payload != hex.EncodeToString(sha256Sum(body)) {
		return "XAmzContentSHA256Mismatch", payload
	}
	signedHeaders := strings.Split(fields["SignedHeaders"], ";")
	if !slices.Contains(signedHeaders, "host") || !slices.Contains(signedHeaders, "x-amz-date") {
		return "AccessDenied", "host and x-amz-date must be signed"
	}
	var canonHeaders strings.Builder
	for _, h := range signedHeaders {
		v := r.Header.Values(h)
		if h == "host" {
			v = []string{r.Host}
		}
		for i := range v {
			v[i] = strings.Join(strings.Fields(v[i]), " ")
		}
		canonHeaders.WriteString(h + ":" + strings.Join(v, ",") + "\n")
	}
	canonical := strings.Join([]string{
		r.Method, r.URL.EscapedPath(), canonicalQuery(r.URL.Query()),
		canonHeaders.String(), fields["SignedHeaders"], payload,
	}, "\n")
	scope := strings.Join(cred[1:], "/")
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sha256Sum([]byte(canonical)))
	key := []byte("AWS4" + f.secretKey)
	for _, s := range cred[1:] {
		key = hmacSum(key, s)
	}
	if want := hex.EncodeToString(hmacSum(key, toSign)); !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch", "canonical request:\n" + canonical
	}
	return "", ""
}

// canonicalQuery sorts the parameters and encodes them the SigV4 way (RFC 3986, %20 for space).
func canonicalQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k)+"="+uriEncode(v))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func uriEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func hmacSum(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
