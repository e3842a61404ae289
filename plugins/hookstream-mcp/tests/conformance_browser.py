"""A stand-in for the user's browser (``BROWSER="python conformance_browser.py %s"``): GETs the login URL
and follows the authorization server's redirect to the loopback callback, as a browser would."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=60) as page:
    page.read()
