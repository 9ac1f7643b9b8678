package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

class LendJobCommentTest {
    @Test
    void aHoldersCommentReadsBackAsWhatMadeIt() {
        LendJobComment holder =
                new LendJobComment(LendJobComment.Kind.HOLDER, "n2", 4, 1, "user nobody, account physics");
        assertEquals(
                "vgpu holder: a GPU of n2 lent to job 4 as its vGPU 1 (user nobody, account physics)", holder.text());
        assertEquals(Optional.of(holder), LendJobComment.parse(holder.text()));
    }

    @Test
    void aGrantHoldersCommentReadsBackAsWhatMadeIt() {
        LendJobComment grant = new LendJobComment(LendJobComment.Kind.GRANT, "n1", 12, 2, "user root");
        assertEquals("vgpu grant: a GPU of n1 granted to job 12 for its vGPU 2 (user root)", grant.text());
        assertEquals(Optional.of(grant), LendJobComment.parse(grant.text()));
    }

    @Test
    void otherCommentsAreNoLendJobs() {
        for (String comment : new String[] {"", "my run", "vgpu: assembled on n2: 2 local GPU(s), 2 borrowed []"}) {
            assertEquals(Optional.empty(), LendJobComment.parse(comment), comment);
            assertFalse(LendJobComment.looksLikeOne(comment), comment);
        }
    }

    @Test
    void aCommentThatBeginsAsAHoldersButIsCutOrGarbledIsRefusedWithTheFormat() {
        for (String comment : new String[] {
            "vgpu holder: a GPU of n2 lent to job 4",
            "vgpu holder: a GPU of n2 lent to job four as its vGPU 1 (user root)",
            "vgpu holder: a GPU of n2 granted to job 4 for its vGPU 1 (user root)",
            "vgpu grant: a GPU of n1 lent to job 4 as its vGPU 1 (user root)",
            "vgpu holder: a GPU of n2 lent to job 0 as its vGPU 1 (user root)"
        }) {
            assertTrue(LendJobComment.looksLikeOne(comment), comment);
            IllegalArgumentException error =
                    assertThrows(IllegalArgumentException.class, () -> LendJobComment.parse(comment), comment);
            assertTrue(error.getMessage().contains(LendJobComment.FORMAT), error.getMessage());
        }
    }
}
