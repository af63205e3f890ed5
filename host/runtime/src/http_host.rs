//! The `loadhost:plugin/http` import: one call per request (see `wit/plugin.wit`).

use std::time::Duration;

use crate::bindings::loadhost::plugin::http;
use crate::ctx::DoerCtx;
use crate::http::FetchError;

impl http::Host for DoerCtx {
    async fn send(&mut self, request: http::Request) -> Result<http::Response, http::Error> {
        let http::Request { method, url, headers, body, timeout_ms } = request;
        let timeout = timeout_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        let client = self.http_client.clone();
        // wasmtime boxes a host call's future, copying all of it; boxed here, only a pointer is
        // copied there (the request's future is kilobytes: the largest memcpy per request).
        let fetch = Box::pin(client.fetch(&mut self.connections, &method, &url, headers, body, timeout, &self.metrics));
        match fetch.await {
            Ok(response) => Ok(http::Response {
                status: response.status,
                headers: response
                    .headers
                    .iter()
                    .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                    .collect(),
                body: Vec::from(response.body),
            }),
            Err(FetchError::Invalid(why)) => Err(http::Error::InvalidRequest(why)),
            Err(FetchError::Denied(url)) => Err(http::Error::Denied(url)),
            Err(FetchError::Network(why)) => Err(http::Error::Network(why)),
        }
    }
}
