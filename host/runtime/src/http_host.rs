//! The `loadhost:plugin/http` import: one call per request (see `wit/plugin.wit`).

use std::time::Duration;

use crate::bindings::loadhost::plugin::http;
use crate::ctx::DoerCtx;
use crate::http::FetchError;

impl http::Host for DoerCtx {
    async fn send(&mut self, request: http::Request) -> Result<http::Response, http::Error> {
        self.send_parts(request, http::ResponseParts { headers: true, body: true }).await
    }

    async fn send_with(
        &mut self,
        request: http::Request,
        parts: http::ResponseParts,
    ) -> Result<http::Response, http::Error> {
        self.send_parts(request, parts).await
    }
}

impl DoerCtx {
    /// One request; the response carries only `parts` (lowering each header is two allocations in
    /// the host and two in the plugin, so a plugin that reads none should not pay for them).
    async fn send_parts(
        &mut self,
        request: http::Request,
        parts: http::ResponseParts,
    ) -> Result<http::Response, http::Error> {
        let http::Request { method, url, headers, body, timeout_ms } = request;
        let timeout = timeout_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        let client = self.http_client.clone();
        // wasmtime boxes a host call's future, copying all of it; boxed here, only a pointer is
        // copied there (the request's future is kilobytes: the largest memcpy per request).
        let fetch = Box::pin(client.fetch(&mut self.connections, &method, &url, headers, body, timeout, &self.metrics));
        match fetch.await {
            Ok(response) => Ok(http::Response {
                status: response.status,
                headers: if parts.headers {
                    response
                        .headers
                        .iter()
                        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                        .collect()
                } else {
                    Vec::new()
                },
                body: if parts.body { Vec::from(response.body) } else { Vec::new() },
            }),
            Err(FetchError::Invalid(why)) => Err(http::Error::InvalidRequest(why)),
            Err(FetchError::Denied(url)) => Err(http::Error::Denied(url)),
            Err(FetchError::Network(why)) => Err(http::Error::Network(why)),
        }
    }
}
