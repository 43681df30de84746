package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io/fs"
	"net/http"

	"github.com/clink-dev/clink/flight/console"
)

// The web console's session (docs/console.md#signing-in): a browser
// cannot send the bearer token with a page load, so /ui/login takes the
// token once, in a form, and sets a cookie holding an HMAC of it. guard
// accepts that cookie instead of the Authorization header for GET (and
// HEAD) requests only: the console reads; a cross-site form cannot make
// it change anything (SameSite=Strict besides). The cookie is HttpOnly,
// and Secure when the API serves HTTPS; a new token invalidates it.

const sessionCookie = "clink_console"

// sessionValue is the cookie's value for the configured token.
func (c *Coordinator) sessionValue() string {
	m := hmac.New(sha256.New, []byte(c.cfg.Token))
	m.Write([]byte("clink console session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// consoleSession reports whether r is a read with a valid console
// session cookie.
func (c *Coordinator) consoleSession(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	want := c.sessionValue()
	return subtle.ConstantTimeCompare([]byte(ck.Value), []byte(want)) == 1
}

func (c *Coordinator) getLogin(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Token == "" || c.consoleSession(r) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	page, err := fs.ReadFile(console.Files(), "login.html")
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
	w.Write(page)
}

// postLogin checks the token of the sign-in form, or the request's bearer
// token (constant time), and sets the session cookie.
func (c *Coordinator) postLogin(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Token == "" {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	got := sha256.Sum256([]byte(r.PostForm.Get("token")))
	want := sha256.Sum256([]byte(c.cfg.Token))
	bearer := sha256.Sum256([]byte(r.Header.Get("Authorization")))
	wantBearer := sha256.Sum256([]byte("Bearer " + c.cfg.Token))
	if subtle.ConstantTimeCompare(got[:], want[:])|subtle.ConstantTimeCompare(bearer[:], wantBearer[:]) != 1 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte("wrong token\n"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: c.sessionValue(), Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}
