package org.vgpu.common.line;

import java.util.List;

/** Answers the requests that reach a {@link LineServer}. */
@FunctionalInterface
public interface LineService {
    /**
     * The reply lines to one request, each without its newline; must not throw, and must never
     * put a line break or other control character into a reply, whatever the request held.
     *
     * @param localHost the address the request arrived at ("localhost" on a UNIX socket)
     */
    List<String> answer(BoundedLineReader.Line request, String localHost);

    /**
     * Whether the connection ends once a request longer than the limit is answered: a peer that
     * overruns a small command protocol is not speaking it. The default keeps it open.
     */
    default boolean closesAfterOverlongRequest() {
        return false;
    }

    /**
     * The peer closed the connection while its request was being answered, so nobody will read {@code reply} (it
     * is still written, for a peer that only shut down its sending side): a service whose reply hands something out
     * takes it back here. The default does nothing.
     */
    default void peerLeftBeforeReply(List<String> reply) {}
}
