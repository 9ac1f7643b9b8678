package org.vgpu.runtime.control;

import java.util.List;

/** Answers the requests that reach a {@link LineServer}. */
@FunctionalInterface
public interface LineService {
    /**
     * The reply lines to one request, each without its newline; must not throw, and must never
     * put a line break or other control character into a reply, whatever the request held.
     *
     * @param localHost the address the request arrived at
     */
    List<String> answer(BoundedLineReader.Line request, String localHost);
}
