/**
 * The Netty transport shared by both ends of a remote vGPU: native epoll where available, and event
 * loops that may poll before they sleep and that read their sockets between the writes other
 * threads hand them.
 */
package org.vgpu.runtime.remote.transport;
