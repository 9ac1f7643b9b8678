package org.vgpu.common.error;

import java.io.EOFException;
import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/**
 * The reason an I/O failure gives, in vgpu's words rather than the JDK's ("connection refused",
 * "permission denied"), so a user-facing message never carries a Java exception's text. The
 * exception itself stays the cause, for logs.
 */
public final class IoReasons {
    private IoReasons() {}

    public static String of(IOException failure) {
        String jdkText = String.valueOf(failure.getMessage());
        return switch (failure) {
            // Netty's connect timeout is a ConnectException too
            case ConnectException e when jdkText.contains("timed out") -> "no answer in time";
            case ConnectException e -> "connection refused";
            case SocketTimeoutException e -> "no answer in time";
            case UnknownHostException e -> "unknown host";
            case NoRouteToHostException e -> "no route to the host";
            case BindException e -> "the address is in use or not one of this machine's";
            case NoSuchFileException e -> "no such file or directory";
            case AccessDeniedException e -> "permission denied";
            case FileAlreadyExistsException e -> "the file already exists";
            case NotDirectoryException e -> "not a directory";
            case EOFException e -> "the data ended early";
            case SocketException e when jdkText.contains("Permission denied") -> "permission denied";
            case SocketException e when jdkText.contains("reset") -> "connection reset by the peer";
            case SocketException e when jdkText.contains("Broken pipe") -> "the peer closed the connection";
            case SocketException e when jdkText.contains("No such file") -> "no such file or directory";
            case SocketException e when jdkText.contains("Connection refused") -> "connection refused";
            // Netty's native transports throw plain IOExceptions with the C library's words
            case IOException e when jdkText.contains("Address already in use") -> "the address is in use";
            case IOException e
            when jdkText.contains("Cannot assign requested address") -> "the address is not one of this machine's";
            case IOException e when jdkText.contains("Connection refused") -> "connection refused";
            case IOException e when jdkText.contains("Connection reset") -> "connection reset by the peer";
            case IOException e when jdkText.contains("No space left") -> "no space left on the device";
            case IOException e when jdkText.contains("Permission denied") -> "permission denied";
            case IOException e when jdkText.contains("Too many open files") -> "too many open files";
            // a program ProcessBuilder cannot start: "Cannot run program ...: error=2, No such file or directory"
            case IOException e when jdkText.contains("No such file or directory") -> "no such file or directory";
            default -> "input/output error";
        };
    }
}
