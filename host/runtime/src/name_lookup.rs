//! `wasi:sockets/ip-name-lookup` restricted to the allow-list: a plugin may resolve only the names
//! an `--allow-host` rule gives (IP literals need no lookup). Any other name fails as if it did
//! not exist, so a lookup cannot carry data out of the sandbox to a resolver the user never
//! granted. wasmtime-wasi's own implementation answers the names that pass.

use std::sync::Arc;

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{Host, HostResolveAddressStream, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

use crate::http::allow::AllowList;

/// The linker's view of the filtered lookup (see [`HasData`]).
pub(crate) struct NameLookup;

impl HasData for NameLookup {
    type Data<'a> = Filtered<'a>;
}

/// A store's sockets, with the allow-list its lookups go through.
pub(crate) struct Filtered<'a> {
    pub(crate) sockets: WasiSocketsCtxView<'a>,
    pub(crate) allow: Arc<AllowList>,
}

impl Host for Filtered<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        if !self.allow.allows_lookup(&name) {
            tracing::debug!("the plugin looked up {name:?}, which no --allow-host rule names: refused");
            return Err(ErrorCode::NameUnresolvable.into());
        }
        Host::resolve_addresses(&mut self.sockets, network, name)
    }
}

impl HostResolveAddressStream for Filtered<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        HostResolveAddressStream::resolve_next_address(&mut self.sockets, stream)
    }

    fn subscribe(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<Resource<DynPollable>> {
        HostResolveAddressStream::subscribe(&mut self.sockets, stream)
    }

    fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        HostResolveAddressStream::drop(&mut self.sockets, stream)
    }
}

// The lookup's error conversions belong to `wasi:sockets/network`, which the bindings ask of the
// same view; they are wasi's own.
impl network::Host for Filtered<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.sockets, error)
    }

    fn network_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.sockets, err)
    }
}

impl network::HostNetwork for Filtered<'_> {
    fn drop(&mut self, this: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.sockets, this)
    }
}
