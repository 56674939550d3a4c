package dev.protobench.server.web;

import dev.protobench.server.rest.RestErrors;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Locale;
import org.springframework.boot.web.servlet.error.ErrorController;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * The error page for errors the container itself raises (Tomcat's 408 when a request body stops
 * arriving, its 400 when a body cannot be read, an exception no handler caught): the same
 * {"code", "message"} body as every other REST error, in place of Spring Boot's default one.
 * Never carries exception details.
 */
@Controller
public final class ContainerErrors implements ErrorController {

    @RequestMapping("/error")
    public ResponseEntity<Object> error(HttpServletRequest request) {
        Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
        int status = code instanceof Integer i && i >= 400 && i <= 599 ? i : 500;
        String message = switch (status) {
            case 408 -> "request timeout: the request did not arrive in time";
            case 400 -> "bad request: the request could not be read";
            case 404 -> "not found";
            case 500 -> "internal error";
            default -> {
                HttpStatus known = HttpStatus.resolve(status);
                yield known == null ? "error" : known.getReasonPhrase().toLowerCase(Locale.ROOT);
            }
        };
        return RestErrors.body(HttpStatusCode.valueOf(status), message, null);
    }
}
