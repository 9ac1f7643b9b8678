/** The Netty transport shared by both ends of a remote vGPU: native epoll where available, and event loops that may poll before they sleep. */
package org.vgpu.runtime.remote.transport;
