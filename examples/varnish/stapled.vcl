vcl 4.1;
backend stapled { .host = "127.0.0.1"; .port = "8090"; }

sub vcl_recv {
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);            # OCSP POST: never cached
    }
    unset req.http.Cookie;
    unset req.http.Authorization;
}

sub vcl_backend_response {
    # TTL from stapled's max-age (Varnish's default); no grace, no keep:
    # grace would serve an object past its max-age.
    set beresp.grace = 0s;
    set beresp.keep = 0s;
}
