"""A stand-in browser for `$BROWSER`: `python browser.py URL` follows the authorization
server's redirect to dsh's loopback listener, as a person's browser would."""

import sys

import httpx

if __name__ == "__main__":
    httpx.get(sys.argv[1], follow_redirects=True).raise_for_status()
