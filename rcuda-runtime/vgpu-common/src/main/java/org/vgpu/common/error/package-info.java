/** vgpu's failures by domain: each names what went wrong in the product's words, with a stable code. */
package org.vgpu.common.error;
